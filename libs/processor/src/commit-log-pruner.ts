import { Inject, Injectable } from '@nestjs/common';
import { REDELIVERY_HORIZON_MS } from '@cdp/bus';
import { LOGGER, type Logger } from '@cdp/logger';
import { AnalyticStore } from '@cdp/store';

/** Commit brackets are kept past the bus's redelivery horizon by this margin (clock skew, slow batches). */
export const COMMIT_LOG_MARGIN_MS = 24 * 3600 * 1000;
/** How often an account's commit log is pruned: its size is the horizon plus at most this. */
export const COMMIT_LOG_PRUNE_EVERY_MS = 3600 * 1000;

/**
 * Keeps each account's commit log (AnalyticStore.begin/commit) to the bus's redelivery horizon: after
 * a commit, at most once an hour per account, the brackets of messages committed more than the
 * horizon and a day ago are dropped. It runs beside the writes (a failure is logged and tried again
 * an hour later): a stale commit log costs reads, never correctness.
 */
@Injectable()
export class CommitLogPruner {
  private readonly pruned = new Map<string, number>();
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: AnalyticStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Told after each commit of the account; starts a prune when the last is an hour old. */
  afterCommit(account: string, now = Date.now()): void {
    if (now - (this.pruned.get(account) ?? 0) < COMMIT_LOG_PRUNE_EVERY_MS) return;
    this.pruned.set(account, now);
    this.running = this.running.then(() => this.prune(account, now));
  }

  /** Prunes the account's commit log as of `now`; returns how many messages' brackets were dropped. */
  async prune(account: string, now = Date.now()): Promise<number> {
    try {
      return await this.store.pruneCommits(account, now - REDELIVERY_HORIZON_MS - COMMIT_LOG_MARGIN_MS);
    } catch (err) {
      // The time set before this prune stays: the next try is an hour later, not at the next commit.
      this.logger.warn({ err, account }, 'pruning the commit log failed; trying again in an hour');
      return 0;
    }
  }

  /** The prunes started so far, settled (a test's and a shutdown's wait). */
  idle(): Promise<void> {
    return this.running.then(() => undefined);
  }
}
