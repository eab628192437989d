import { jest } from '@jest/globals';
import type { InspectorEntry } from '../inspector-entry.js';
import { acceptedEntry } from '../verdicts.js';
import { MemoryInspector, RING_SIZE } from './memory-inspector.adapter.js';

const received = { requestId: 'r1', route: 'POST /v3/events', kind: 'events', status: 202 };

describe('MemoryInspector', () => {
  it('builds nothing for an account nobody watches', () => {
    const inspector = new MemoryInspector();
    let built = 0;
    inspector.offer('a1', 3, (i) => {
      built++;
      return acceptedEntry(received, {}, i);
    });
    expect(built).toBe(0);
    expect(inspector.watching('a1')).toBe(false);
  });

  it('fans out to the views of that account only, replays its short buffer, and forgets it with the last view', () => {
    const inspector = new MemoryInspector();
    const seen: InspectorEntry[] = [];
    const other: InspectorEntry[] = [];
    const view = inspector.open('a1', (e) => seen.push(e));
    const otherView = inspector.open('a2', (e) => other.push(e));
    inspector.offer('a1', 2, (i) =>
      acceptedEntry(received, { type: 'xy'[i] }, i, i === 1 ? ['z'] : undefined),
    );
    expect(seen.map((e) => (e.type === 'verdict' ? [e.id, e.dropped] : e.type))).toEqual([
      ['r1#0', undefined],
      ['r1#1', ['z']],
    ]);
    expect(other).toEqual([]);
    const late: InspectorEntry[] = [];
    const second = inspector.open('a1', (e) => late.push(e));
    expect(late).toHaveLength(2);
    view.close();
    expect(inspector.watching('a1')).toBe(true);
    second.close();
    expect(inspector.watching('a1')).toBe(false);
    const again: InspectorEntry[] = [];
    inspector.open('a1', (e) => again.push(e));
    expect(again).toEqual([]); // nothing kept once nobody watched
    otherView.close();
  });

  it('over the bound builds at most the bound, still counting every record for the next second’s rate', () => {
    const inspector = new MemoryInspector(10);
    const seen: InspectorEntry[] = [];
    const view = inspector.open('a1', (e) => seen.push(e));
    let built = 0;
    const make = (i: number) => {
      built++;
      return acceptedEntry(received, {}, i);
    };
    inspector.offer('a1', 1000, make, (i) => ({ requestId: 'r1', index: i }));
    expect(built).toBe(10);
    expect(seen.filter((e) => e.type === 'notice')).toHaveLength(1);
    // A second later, the notice gives the rate of all thousand, not only of those looked at one by one.
    const later = Date.now() + 1000;
    const spy = jest.spyOn(Date, 'now').mockReturnValue(later);
    try {
      inspector.offer('a1', 1, make, () => ({ requestId: 'r2', index: 0 }));
    } finally {
      spy.mockRestore();
    }
    const notices = seen.filter((e) => e.type === 'notice');
    expect(notices.at(-1)?.message).toMatch(/about (9\d\d|1000)\/s/);
    view.close();
  });

  it('keeps at most RING_SIZE entries', () => {
    const inspector = new MemoryInspector(100_000);
    const view = inspector.open('a1', () => undefined);
    inspector.offer('a1', RING_SIZE + 20, (i) => acceptedEntry(received, i, i));
    const replay: InspectorEntry[] = [];
    inspector.open('a1', (e) => replay.push(e));
    expect(replay).toHaveLength(RING_SIZE);
    view.close();
  });
});
