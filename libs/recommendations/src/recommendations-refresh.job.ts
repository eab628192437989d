import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { AnalyticStore } from '@cdp/store';
import { RecommendationsRefresh } from './recommendations-refresh.js';
import { LEASE_MS, RefreshLease } from './refresh-lease.js';

/** How often accounts are checked for newly committed messages, at the most. */
export const REFRESH_INTERVAL_MS = 1_000;
/**
 * After a pass that took t, the next starts no sooner than this many times t later: the refresh takes at
 * most a fifth of the store's time. A pass's cost grows with the history it joins (every earlier
 * interaction of the customers it touched), not with what it takes in, so under a heavy ingest a pass a
 * second would take the store's time from the inserts; fewer, larger generations derive the same rows.
 * The pause is at most half the refresher's lease, which each pass renews: a pass longer than 1.25 s
 * is followed by a 5 s pause, so it takes more than a fifth, but the lease is never lost to a pause.
 */
export const REFRESH_PAUSE_FACTOR = 4;
const LONGEST_PAUSE_MS = LEASE_MS / 2;

/** How long the job waits after a pass that ran `tookMs` (0: before the first pass). */
export function pauseAfterPass(tookMs: number): number {
  return Math.min(LONGEST_PAUSE_MS, Math.max(REFRESH_INTERVAL_MS, REFRESH_PAUSE_FACTOR * tookMs));
}

/**
 * Runs beside the processor (the store's writer): every second (less often while passes are long, see
 * REFRESH_PAUSE_FACTOR), each account with messages committed since its last refresh gets its
 * recommendation tables brought up to date — by one processor at a time (RefreshLease).
 */
@Injectable()
export class RecommendationsRefreshJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly refresh: RecommendationsRefresh;
  private readonly lease: RefreshLease;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Whether this process held the lease at its last pass. */
  private holding = false;

  constructor(
    store: AnalyticStore,
    private readonly metadata: MetadataStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.refresh = new RecommendationsRefresh(store);
    this.lease = new RefreshLease(metadata);
  }

  onApplicationBootstrap(): void {
    this.schedule();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.lease.release().catch(() => undefined);
  }

  /** The next pass, after the last one's pause (`tookMs`: how long that pass ran). */
  private schedule(tookMs = 0): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const started = performance.now();
      this.running = this.tick().finally(() => this.schedule(performance.now() - started));
    }, pauseAfterPass(tookMs));
    this.timer.unref();
  }

  /** One pass over the accounts; a failing account is logged and tried again next time. */
  async tick(): Promise<void> {
    let accounts: { id: string }[];
    try {
      const held = await this.lease.hold();
      // Taken over (or first taken): whatever another refresher did meanwhile is read again.
      if (held && !this.holding) this.refresh.restart();
      this.holding = held;
      if (!held) return; // another processor refreshes
      accounts = (await this.metadata.list<{ id: string }>('accounts')).map((a) => a.value);
    } catch (err) {
      this.holding = false;
      this.logger.warn({ err }, 'recommendations: accounts could not be listed');
      return;
    }
    for (const { id } of accounts) {
      if (this.stopped) return;
      try {
        const taken = await this.refresh.refresh(id);
        if (taken) this.logger.debug({ account: id, messages: taken }, 'recommendations refreshed');
      } catch (err) {
        this.logger.warn({ err, account: id }, 'recommendations refresh failed; retrying later');
      }
    }
  }
}
