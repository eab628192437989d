import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@cdp/logger';
import type { MetadataStore } from '@cdp/metadata';
import { FileMetadataStore } from '@cdp/metadata/file';
import { EXPORTS_BUCKET, type ExportJob } from './export-record.js';
import type { CompleteManifest } from './export.runner.js';
import { ExportWorker, type JobRunner } from './export.worker.js';
import { OPEN_EXPORTS_BUCKET, recordJob } from './open-exports.js';
import { eventually } from '../../../test/support/eventually.js';

const logger = createLogger('silent');

/**
 * A runner the test steers: each run waits until the test lets it finish, so the states in
 * between can be observed. It honours the abort signal as the real runner does between pages.
 */
class SteppedRunner implements JobRunner {
  runs: { id: string; state: string | undefined }[] = [];
  private release: (() => void) | undefined;
  private markStarted: (() => void) | undefined;
  readonly started = new Promise<void>((resolve) => (this.markStarted = resolve));
  outcome: (job: ExportJob) => CompleteManifest = (job) => ({
    export_id: job.record.id,
    state: 'completed',
    files: [],
    columns: {},
  });

  constructor(private readonly metadata: FileMetadataStore) {}

  async run(job: ExportJob, signal: AbortSignal): Promise<CompleteManifest> {
    const stored = await this.metadata.get<ExportJob>(EXPORTS_BUCKET, job.record.id);
    this.runs.push({ id: job.record.id, state: stored?.value.record.state });
    const done = new Promise<void>((resolve, reject) => {
      this.release = resolve;
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
    this.markStarted?.();
    await done;
    return this.outcome(job);
  }

  finish(): void {
    this.release?.();
  }
}

function job(id: string, at = '2026-11-22T10:00:00.000Z'): ExportJob {
  return {
    account: 'acc',
    trackerId: 'trk',
    attempts: 0,
    record: {
      id,
      path: `/x/trk/data-exports/${id}`,
      state: 'pending',
      requested_at: at,
      definition_id: 'd',
      detail: { format: 'CSV', delimiter: 'comma', objects: ['events', 'customers'] },
    },
  };
}

describe('export worker', () => {
  let metadata: FileMetadataStore;
  beforeEach(() => {
    metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-export-worker-')));
  });
  afterEach(() => metadata.close());

  const stored = async (id: string) => (await metadata.get<ExportJob>(EXPORTS_BUCKET, id))!.value;
  const worker = (runner: JobRunner, now?: () => number, leaseMs = 10_000) =>
    new ExportWorker(metadata, runner, { pollMs: 10, leaseMs }, logger, now);

  it('moves a job pending → running → completed, running while the runner works', async () => {
    await metadata.create(EXPORTS_BUCKET, 'j1', job('j1'));
    const runner = new SteppedRunner(metadata);
    const w = worker(runner);
    const ran = w.tick();
    await runner.started;
    expect(runner.runs).toEqual([{ id: 'j1', state: 'running' }]);
    expect(await stored('j1')).toMatchObject({ owner: w.id, attempts: 1, record: { state: 'running' } });
    runner.finish();
    expect(await ran).toBe(true);
    const done = await stored('j1');
    expect(done.record.state).toBe('completed');
    expect(done.record.completed_at).toEqual(expect.any(String));
    expect(done.owner).toBeUndefined();
    expect(await w.tick()).toBe(false); // nothing left to do
  });

  it('records completed_with_errors with the objects that failed and why', async () => {
    await metadata.create(EXPORTS_BUCKET, 'j2', job('j2'));
    const runner = new SteppedRunner(metadata);
    runner.outcome = (j) => ({
      export_id: j.record.id,
      state: 'completed_with_errors',
      files: [],
      columns: {},
      errors: [{ object: 'customers', reason: 'boom' }],
    });
    const ran = worker(runner).tick();
    await runner.started;
    runner.finish();
    await ran;
    expect((await stored('j2')).record).toMatchObject({
      state: 'completed_with_errors',
      errors: [{ object: 'customers', reason: 'boom' }],
    });
  });

  it("marks every object failed when the run itself fails, in the user's words, not the engine's", async () => {
    await metadata.create(EXPORTS_BUCKET, 'j3', job('j3'));
    const failing: JobRunner = {
      run: () => Promise.reject(new Error('Code: 60. DB::Exception: Table acc_x.events does not exist')),
    };
    await worker(failing).tick();
    const reason = (object: string) =>
      `could not export ${object}: an unexpected error stopped it; the export can be requested again`;
    expect((await stored('j3')).record).toMatchObject({
      state: 'completed_with_errors',
      errors: [
        { object: 'events', reason: reason('events') },
        { object: 'customers', reason: reason('customers') },
      ],
    });
  });

  it('lets exactly one of two workers claim a job (compare-and-set)', async () => {
    await metadata.create(EXPORTS_BUCKET, 'j4', job('j4'));
    let runs = 0;
    const counting: JobRunner = {
      run: async (j) => {
        runs++;
        await new Promise((r) => setTimeout(r, 20));
        return { export_id: j.record.id, state: 'completed', files: [], columns: {} };
      },
    };
    const results = await Promise.all([
      worker(counting).tick(),
      worker(counting).tick(),
      worker(counting).tick(),
    ]);
    expect(runs).toBe(1);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect((await stored('j4')).attempts).toBe(1);
  });

  it('hands an interrupted job back on stop; a restarted worker resumes it', async () => {
    await metadata.create(EXPORTS_BUCKET, 'j5', job('j5'));
    const first = new SteppedRunner(metadata);
    const a = worker(first);
    a.start();
    await first.started;
    await a.stop();
    expect((await stored('j5')).record.state).toBe('pending');

    const second = new SteppedRunner(metadata);
    const b = worker(second);
    const ran = b.tick();
    await second.started;
    second.finish();
    await ran;
    expect(await stored('j5')).toMatchObject({ attempts: 2, record: { state: 'completed' } });
  });

  it('takes over a job left running by a dead worker once its lease has run out, not before', async () => {
    let clock = Date.parse('2026-11-22T10:00:00Z');
    const dead: ExportJob = { ...job('j6'), owner: 'gone', heartbeat: clock, attempts: 1 };
    dead.record.state = 'running';
    await metadata.create(EXPORTS_BUCKET, 'j6', dead);
    const runner = new SteppedRunner(metadata);
    const w = worker(runner, () => clock, 30_000);
    clock += 29_000;
    expect(await w.tick()).toBe(false);
    clock += 2_000;
    const ran = w.tick();
    await runner.started;
    runner.finish();
    expect(await ran).toBe(true);
    expect(await stored('j6')).toMatchObject({ attempts: 2, record: { state: 'completed' } });
  });

  it('keeps its lease while it runs, so a live job is never taken over', async () => {
    await metadata.create(EXPORTS_BUCKET, 'j7', job('j7'));
    let clock = Date.parse('2026-11-22T10:00:00Z');
    const now = () => clock;
    const runner = new SteppedRunner(metadata);
    const a = worker(runner, now, 150);
    const ran = a.tick();
    await runner.started;
    const other = worker(new SteppedRunner(metadata), now, 150);
    // Six times two thirds of a lease: long expired unless renewed. Each time, the awaited signal is
    // the running worker's heartbeat reaching the moved clock; then the other may not take the job.
    for (let i = 0; i < 6; i++) {
      clock += 100;
      await eventually(async () => (await stored('j7')).heartbeat === clock);
      expect(await other.tick()).toBe(false);
    }
    runner.finish();
    await ran;
    expect(await stored('j7')).toMatchObject({ attempts: 1, record: { state: 'completed' } });
  });

  it('runs jobs in the order they were requested', async () => {
    await metadata.create(EXPORTS_BUCKET, 'late', job('late', '2026-11-22T10:00:02.000Z'));
    await metadata.create(EXPORTS_BUCKET, 'early', job('early', '2026-11-22T10:00:01.000Z'));
    const order: string[] = [];
    const recording: JobRunner = {
      run: (j) => {
        order.push(j.record.id);
        return Promise.resolve({ export_id: j.record.id, state: 'completed', files: [], columns: {} });
      },
    };
    const w = worker(recording);
    await w.tick();
    await w.tick();
    expect(order).toEqual(['early', 'late']);
  });

  it('looks at the open exports only: 10,000 finished exports cost a poll no read', async () => {
    const finished = (id: string): ExportJob => {
      const done = job(id);
      done.record.state = 'completed';
      return done;
    };
    for (let i = 0; i < 10_000; i++)
      await metadata.create(EXPORTS_BUCKET, `done-${i}`, finished(`done-${i}`));
    const reads = countReads(metadata);
    const ran: string[] = [];
    const recording: JobRunner = {
      run: (j) => {
        ran.push(j.record.id);
        return Promise.resolve({ export_id: j.record.id, state: 'completed', files: [], columns: {} });
      },
    };
    const w = new ExportWorker(reads.store, recording, { pollMs: 10, leaseMs: 10_000 }, logger);
    // The first look of the deployment fills the open exports from the records, once.
    expect(await w.tick()).toBe(false);
    expect(reads.lists[EXPORTS_BUCKET]).toBe(1);

    for (const round of [1, 2, 3]) {
      reads.reset();
      await recordJob(metadata, job(`open-${round}`), Date.now());
      expect(await w.tick()).toBe(true);
      expect(await w.tick()).toBe(false);
      // Two looks: one listing of the open exports each, and the one open job read (then closed).
      expect(reads.lists).toEqual({ [OPEN_EXPORTS_BUCKET]: 2 });
      expect(reads.gets[EXPORTS_BUCKET]).toBe(1);
    }
    expect(ran).toEqual(['open-1', 'open-2', 'open-3']);
    expect(await metadata.list(OPEN_EXPORTS_BUCKET)).toEqual([]);
    // Another exporter starting later does not list the records again.
    reads.reset();
    const other = new ExportWorker(reads.store, recording, { pollMs: 10, leaseMs: 10_000 }, logger);
    expect(await other.tick()).toBe(false);
    expect(reads.lists).toEqual({ [OPEN_EXPORTS_BUCKET]: 1 });
  });

  it('closes an open export whose job was never written once it is an orphan, and one already finished', async () => {
    let clock = Date.parse('2026-11-22T10:00:00Z');
    await metadata.create(OPEN_EXPORTS_BUCKET, 'never', {
      requested_at: '2026-11-22T10:00:00.000Z',
      at: clock,
    });
    const finishedJob = job('finished');
    finishedJob.record.state = 'completed';
    await metadata.create(OPEN_EXPORTS_BUCKET, 'finished', {
      requested_at: '2026-11-22T10:00:00.000Z',
      at: clock,
    });
    await metadata.create(EXPORTS_BUCKET, 'finished', finishedJob);
    const w = worker(new SteppedRunner(metadata), () => clock);
    expect(await w.tick()).toBe(false);
    expect((await metadata.list(OPEN_EXPORTS_BUCKET)).map((e) => e.key)).toEqual(['never']);
    clock += 61_000;
    expect(await w.tick()).toBe(false);
    expect(await metadata.list(OPEN_EXPORTS_BUCKET)).toEqual([]);
  });
});

/** The store with its listings and reads counted by bucket: what a look for work costs. */
function countReads(target: MetadataStore) {
  const lists: Record<string, number> = {};
  const gets: Record<string, number> = {};
  const store = new Proxy(target, {
    get(t, prop, receiver) {
      const value = Reflect.get(t, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const bucket = args[0] as string;
        if (prop === 'list') lists[bucket] = (lists[bucket] ?? 0) + 1;
        if (prop === 'get') gets[bucket] = (gets[bucket] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
  const reset = () => {
    for (const k of Object.keys(lists)) delete lists[k];
    for (const k of Object.keys(gets)) delete gets[k];
  };
  return { store, lists, gets, reset };
}
