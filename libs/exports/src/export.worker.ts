import { randomUUID } from 'node:crypto';
import type { Logger } from '@cdp/logger';
import type { Metrics } from '@cdp/metrics';
import { Lease, MetadataConflictError, PollLoop, type MetadataStore, type Versioned } from '@cdp/metadata';
import { failureReason } from './export-failure.js';
import { EXPORTS_BUCKET, type ExportJob } from './export-record.js';
import { closeJob, fillOpenExportsOnce, openJobs } from './open-exports.js';
import type { CompleteManifest } from './export.runner.js';

/** What runs a claimed job; the DuckDB runner in production, anything in the state-machine tests. */
export interface JobRunner {
  run(job: ExportJob, signal: AbortSignal): Promise<CompleteManifest>;
}

export interface ExportWorkerOptions {
  /** How often the pending jobs are looked for. */
  pollMs: number;
  /** A running job whose worker has not renewed its lease for this long is taken over. */
  leaseMs: number;
  workerId?: string;
  /** Counts jobs, rows and bytes written (the process's metrics). */
  metrics?: Metrics;
}

/**
 * Picks export jobs from the metadata store and drives them: pending → running → completed or
 * completed_with_errors. A job is claimed by compare-and-set, so two workers never run one; the
 * claim is a lease the worker renews while it runs, so a job left `running` by a dead worker is
 * taken over once the lease runs out; a worker that stops cleanly hands its job back at once.
 */
export class ExportWorker {
  readonly id: string;
  private readonly loop: PollLoop;

  constructor(
    private readonly metadata: MetadataStore,
    private readonly runner: JobRunner,
    private readonly options: ExportWorkerOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.id = options.workerId ?? randomUUID();
    this.loop = new PollLoop(() => this.tick(), {
      pollMs: options.pollMs,
      stoppingReason: 'the export worker is stopping',
      onError: (err) => this.logger.warn({ err }, 'export worker: looking for jobs failed'),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops looking for jobs; a job in progress is interrupted and handed back as pending. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  private filled = false;

  /**
   * Claims and runs one job if there is one; tells whether it did. The open exports are read, not the
   * export records: a look costs the same however many exports were ever run.
   */
  async tick(): Promise<boolean> {
    if (!this.filled) {
      await fillOpenExportsOnce(this.metadata, this.now());
      this.filled = true;
    }
    const now = this.now();
    const candidates = (await openJobs(this.metadata, now)).filter(
      (j) =>
        j.value.record.state === 'pending' ||
        (j.value.record.state === 'running' && (j.value.heartbeat ?? 0) + this.options.leaseMs < now),
    );
    for (const candidate of candidates) {
      if (this.loop.stopping) return false;
      const claimed = await this.claim(candidate);
      if (!claimed) continue;
      await this.loop.run((abort) => this.run(claimed, abort));
      return true;
    }
    return false;
  }

  private async claim(entry: Versioned<ExportJob>): Promise<Versioned<ExportJob> | undefined> {
    const job: ExportJob = {
      ...entry.value,
      record: { ...entry.value.record, state: 'running' },
      owner: this.id,
      heartbeat: this.now(),
      attempts: entry.value.attempts + 1,
    };
    try {
      const revision = await this.metadata.update(EXPORTS_BUCKET, entry.key, job, entry.revision);
      if (entry.value.record.state === 'running') {
        this.logger.warn(
          { export: job.record.id, previous: entry.value.owner },
          'export worker: resuming a job whose worker stopped renewing its lease',
        );
      }
      return { key: entry.key, value: job, revision };
    } catch (err) {
      if (err instanceof MetadataConflictError) return undefined; // another worker was first
      throw err;
    }
  }

  private async run(entry: Versioned<ExportJob>, abort: AbortController): Promise<void> {
    const lease = new Lease(this.metadata, EXPORTS_BUCKET, entry, abort, {
      leaseMs: this.options.leaseMs,
      now: this.now,
      lostReason: 'lost the export job to another worker',
    });
    const write = (change: (job: ExportJob) => ExportJob): Promise<void> => lease.write(change);
    const log = { export: entry.value.record.id, account: entry.value.account, worker: this.id };
    this.logger.info(log, 'export started');
    const metrics = this.options.metrics;
    metrics?.exportJobsRunning.inc();
    let outcome = 'completed_with_errors';
    try {
      const manifest = await this.runner.run(entry.value, abort.signal);
      lease.stopRenewing();
      await write((job) => ({
        ...job,
        record: {
          ...job.record,
          state: manifest.state,
          completed_at: new Date(this.now()).toISOString(),
          ...(manifest.errors?.length ? { errors: manifest.errors } : {}),
        },
        owner: undefined,
      }));
      await closeJob(this.metadata, entry.key).catch(() => undefined); // else the next look closes it
      this.logger.info({ ...log, state: manifest.state, files: manifest.files.length }, 'export finished');
      outcome = manifest.state;
      metrics?.exportRows.inc(manifest.files.reduce((n, f) => n + f.rows, 0));
      metrics?.exportBytes.inc(manifest.files.reduce((n, f) => n + f.bytes, 0));
    } catch (err) {
      lease.stopRenewing();
      if (abort.signal.aborted) {
        if (this.loop.stopping) {
          // Handed back so the next worker (or this one after a restart) picks it up at once.
          await write((job) => ({
            ...job,
            record: { ...job.record, state: 'pending' },
            owner: undefined,
          })).catch(() => undefined);
        }
        this.logger.warn({ ...log, reason: String(abort.signal.reason) }, 'export interrupted');
        outcome = 'interrupted';
        return;
      }
      // A failure outside any one object (the bucket, the scratch space): every object failed.
      this.logger.error({ ...log, err }, 'export failed');
      await write((job) => ({
        ...job,
        record: {
          ...job.record,
          state: 'completed_with_errors',
          completed_at: new Date(this.now()).toISOString(),
          errors: job.record.detail.objects.map((object) => ({
            object,
            reason: failureReason(object, job.record.detail.format, err),
          })),
        },
        owner: undefined,
      }))
        .then(() => closeJob(this.metadata, entry.key))
        .catch(() => undefined);
    } finally {
      metrics?.exportJobsRunning.dec();
      metrics?.exportJobs.inc({ state: outcome });
    }
  }
}
