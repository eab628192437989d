import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileMetadataStore } from './file/index.js';
import { Lease, PollLoop } from './leased-work.js';
import { MetadataConflictError } from './metadata-store.port.js';
import { eventually } from '../../../test/support/eventually.js';

interface Job {
  state: string;
  heartbeat?: number;
}

describe('PollLoop and Lease (the export worker and the bulk loader share them)', () => {
  let metadata: FileMetadataStore;
  beforeEach(() => {
    metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-lease-')));
  });

  it('renews the heartbeat while the work runs and aborts it when another worker takes the entry', async () => {
    const revision = await metadata.create<Job>('jobs', 'j1', { state: 'running', heartbeat: 0 });
    const abort = new AbortController();
    let clock = 1;
    const lease = new Lease<Job>(
      metadata,
      'jobs',
      { key: 'j1', value: { state: 'running' }, revision },
      abort,
      {
        leaseMs: 150,
        now: () => clock++,
        lostReason: 'lost it',
      },
    );
    await eventually(async () => ((await metadata.get<Job>('jobs', 'j1'))?.value.heartbeat ?? 0) > 0);
    await lease.write((j) => ({ ...j, state: 'half-way' }));
    expect(lease.latest.value.state).toBe('half-way');

    // Another worker writes the entry: the next change meets its revision. Like a real worker, it reads
    // again when the lease's heartbeat landed between its read and its write.
    for (;;) {
      const current = (await metadata.get<Job>('jobs', 'j1'))!;
      try {
        await metadata.update('jobs', 'j1', { state: 'running', heartbeat: 99 }, current.revision);
        break;
      } catch (err) {
        if (!(err instanceof MetadataConflictError)) throw err;
      }
    }
    await expect(lease.write((j) => ({ ...j, state: 'done' }))).rejects.toThrow();
    expect(abort.signal.aborted).toBe(true);
    expect(String(abort.signal.reason)).toContain('lost it');
    lease.stopRenewing();
    expect((await metadata.get<Job>('jobs', 'j1'))!.value.heartbeat).toBe(99);
  });

  it('looks again at once after work, a poll later after none, and stop aborts the work in progress', async () => {
    const looks: number[] = [];
    let reason: unknown;
    let work = 2;
    const loop: PollLoop = new PollLoop(
      async () => {
        looks.push(Date.now());
        if (work === 0) return false;
        work--;
        if (work > 0) return true;
        // The last piece runs until the loop stops.
        await loop.run(
          (abort) =>
            new Promise<void>((resolve) =>
              abort.signal.addEventListener('abort', () => {
                reason = abort.signal.reason;
                resolve();
              }),
            ),
        );
        return true;
      },
      { pollMs: 60_000, stoppingReason: 'stopping now', onError: () => undefined },
    );
    loop.start();
    await eventually(() => looks.length === 2);
    expect(loop.stopping).toBe(false);
    await loop.stop();
    expect(loop.stopping).toBe(true);
    expect(String(reason)).toContain('stopping now');
    // Stopped: no third look, although the last tick did work. A look after work is a 0 ms timer set
    // before `stop` returned; timers of equal delay fire in the order they were set, so once a marker
    // timer set now has fired, that look would have happened.
    await new Promise((marker) => setTimeout(marker, 0));
    expect(looks).toHaveLength(2);
  });
});
