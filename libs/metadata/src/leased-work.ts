import { MetadataConflictError, type MetadataStore, type Versioned } from './metadata-store.port.js';

export interface PollLoopOptions {
  /** How long to wait before looking again when a look found nothing to do (or failed). */
  pollMs: number;
  /** Why a piece of work in progress is interrupted when the loop stops. */
  stoppingReason: string;
  /** Told when a look for work fails; the loop looks again a poll later. */
  onError: (err: unknown) => void;
}

/**
 * The loop of a worker that picks work from the metadata store (the export worker, the bulk loader):
 * it looks for work (`tick`), at once again when it found some, a poll later when not; one piece runs
 * at a time, with a signal that `stop` aborts so the piece can be handed back.
 */
export class PollLoop {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  private abort: AbortController | undefined;
  private stopped = false;

  /** `tick` looks once and tells whether it did some work. */
  constructor(
    private readonly tick: () => Promise<boolean>,
    private readonly options: PollLoopOptions,
  ) {}

  /** Whether `stop` was called: a look in progress should not start more work. */
  get stopping(): boolean {
    return this.stopped;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops looking; the work in progress is aborted and awaited. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort?.abort(new Error(this.options.stoppingReason));
    await this.current?.catch(() => undefined);
  }

  /** Runs one piece of work with the controller `stop` aborts (a lease aborts it too when lost). */
  async run<T>(work: (abort: AbortController) => Promise<T>): Promise<T> {
    const abort = new AbortController();
    this.abort = abort;
    try {
      return await work(abort);
    } finally {
      this.abort = undefined;
    }
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.current = this.tick()
        .then((ran) => this.schedule(ran ? 0 : this.options.pollMs))
        .catch((err: unknown) => {
          this.options.onError(err);
          this.schedule(this.options.pollMs);
        });
    }, delay);
  }
}

export interface LeaseOptions {
  /** A holder that has not renewed for this long may be replaced; renewals come three times as often. */
  leaseMs: number;
  now: () => number;
  /** Why the work is aborted when another holder took the entry over. */
  lostReason: string;
}

/**
 * A claimed metadata entry held while its work runs: every change goes through one chain, each against
 * the revision the previous one made, and the heartbeat is renewed in it. A change that meets another
 * revision means another worker took the entry over (the lease ran out): the work is aborted.
 */
export class Lease<T extends { heartbeat?: number }> {
  private latestEntry: Versioned<T>;
  private chain: Promise<void> = Promise.resolve();
  private readonly renewal: NodeJS.Timeout;

  constructor(
    private readonly metadata: MetadataStore,
    private readonly bucket: string,
    claimed: Versioned<T>,
    private readonly abort: AbortController,
    private readonly options: LeaseOptions,
  ) {
    this.latestEntry = claimed;
    this.renewal = setInterval(
      () => void this.write((e) => ({ ...e, heartbeat: options.now() })).catch(() => undefined),
      Math.max(50, Math.floor(options.leaseMs / 3)),
    );
  }

  /** The entry as the last change left it. */
  get latest(): Versioned<T> {
    return this.latestEntry;
  }

  /** Applies `change` to the entry as the previous changes left it. */
  write(change: (entry: T) => T): Promise<void> {
    this.chain = this.chain.then(async () => {
      const value = change(this.latestEntry.value);
      try {
        const revision = await this.metadata.update(
          this.bucket,
          this.latestEntry.key,
          value,
          this.latestEntry.revision,
        );
        this.latestEntry = { key: this.latestEntry.key, value, revision };
      } catch (err) {
        if (err instanceof MetadataConflictError) this.abort.abort(new Error(this.options.lostReason));
        throw err;
      }
    });
    return this.chain;
  }

  /** Stops renewing the heartbeat (the work ended; its last change releases or completes the entry). */
  stopRenewing(): void {
    clearInterval(this.renewal);
  }
}
