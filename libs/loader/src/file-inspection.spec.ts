import { Inspector, type InspectorEntry, type InspectorListener, type InspectorView } from '@cdp/inspector';
import type { ActivityEntry } from './activity.js';
import { FileInspection } from './file-inspection.js';

/** An inspector of one process, watching the accounts named: what the port's `offer` hands it is kept. */
class Watching extends Inspector {
  readonly sent: InspectorEntry[] = [];
  constructor(private readonly watched: Set<string>) {
    super();
  }
  watching(account: string): boolean {
    return this.watched.has(account);
  }
  open(_account: string, _listener: InspectorListener): InspectorView {
    return { close: () => undefined };
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  protected send(_account: string, entries: InspectorEntry[]): void {
    this.sent.push(...entries);
  }
}

const entry = {
  account: 'a1',
  record: {
    id: 'f'.repeat(32),
    name: 'svc_events_1.csv',
    path: 'incoming/pk/svc_events_1.csv',
    data_type: 'events',
    size: 10,
  },
} as ActivityEntry;

describe('FileInspection', () => {
  it('builds nothing while no console watches the account', () => {
    const inspector = new Watching(new Set());
    const records = new Proxy([1, 2], {
      get: (target, key) => {
        if (key === 'length') return target.length;
        throw new Error('a record was read');
      },
    });
    const inspection = new FileInspection(inspector, entry);
    inspection.published('m1', 'events', records);
    inspection.invalid(3, 'x,y\n', [{ field: 'type', reason: 'is required' }]);
    inspection.rejected('50.0% invalid, above 1%', { read: 2, loaded: 0, invalid: 1, dropped: 0 });
    expect(inspector.sent).toEqual([]);
  });

  it('shows published records under their bus message, invalid records and a rejected file', () => {
    const inspector = new Watching(new Set(['a1']));
    const inspection = new FileInspection(inspector, entry);
    inspection.published('m1', 'events', [{ type: 'a' }, { type: 'b' }]);
    inspection.invalid(3, 'x,y\n', [{ field: 'type', reason: 'is required' }]);
    inspection.rejected('50.0% invalid, above 1%', { read: 2, loaded: 0, invalid: 1, dropped: 0 });
    const shown = inspector.sent.map((e) =>
      e.type === 'verdict' ? [e.id, e.verdict, e.route, e.kind, e.status, e.invalids, e.message] : e.type,
    );
    expect(shown).toEqual([
      ['m1#0', 'accepted', 'bulk incoming/pk/svc_events_1.csv', 'bulk events', 202, undefined, undefined],
      ['m1#1', 'accepted', 'bulk incoming/pk/svc_events_1.csv', 'bulk events', 202, undefined, undefined],
      [
        `file:${'f'.repeat(32)}:line:3`,
        'rejected',
        'bulk incoming/pk/svc_events_1.csv line 3',
        'bulk events',
        400,
        [{ field: 'type', reason: 'is required' }],
        undefined,
      ],
      [
        `file:${'f'.repeat(32)}`,
        'rejected',
        'bulk incoming/pk/svc_events_1.csv',
        'bulk events',
        400,
        undefined,
        'file rejected: 50.0% invalid, above 1%',
      ],
    ]);
  });
});
