import { REDELIVERY_HORIZON_MS } from '@cdp/bus';
import { createLogger } from '@cdp/logger';
import type { ClickHouseStore } from '@cdp/store';
import { COMMIT_LOG_MARGIN_MS, COMMIT_LOG_PRUNE_EVERY_MS, CommitLogPruner } from './commit-log-pruner.js';
import { tempChdbStore } from './testing/processor-harness.js';

const DAY = 24 * 3600 * 1000;

/**
 * The commit log holds the bus's redelivery horizon, not the deployment's history (issue 31): its size,
 * and so the cost of every read of it (unfinished messages, at each rebuild), is the same after 10 days
 * of history as after 100.
 */
describe('CommitLogPruner on chDB', () => {
  let store: ClickHouseStore;
  beforeAll(() => {
    store = tempChdbStore('commit-prune');
  });
  afterAll(() => store.close());

  const now = Date.parse('2026-11-26T12:00:00Z');
  /** `perDay` messages begun and committed on each of the `days` before `now`, and one cut short long ago. */
  async function history(account: string, days: number, perDay: number): Promise<void> {
    await store.ensureAccount(account);
    await store.execute(
      account,
      `INSERT INTO {db}.ingest_commits (msg_id, done, at)
       SELECT concat('m', toString(intDiv(number, 2))), number % 2,
         fromUnixTimestamp64Milli(${now} - intDiv(number, ${2 * perDay}) * ${DAY} - 60000 + number % 2, 'UTC')
       FROM numbers(${2 * days * perDay})`,
    );
    await store.execute(
      account,
      `INSERT INTO {db}.ingest_commits (msg_id, done, at) VALUES ('cut-short', 0, fromUnixTimestamp64Milli(${now - days * DAY}, 'UTC'))`,
    );
  }
  const rows = async (account: string) =>
    Number((await store.query<{ n: number }>(account, 'SELECT count() AS n FROM {db}.ingest_commits'))[0]!.n);

  it('keeps the horizon and a day whatever the history, and every unfinished message', async () => {
    const pruner = new CommitLogPruner(store, createLogger('silent'));
    const kept = Math.ceil((REDELIVERY_HORIZON_MS + COMMIT_LOG_MARGIN_MS) / DAY);
    const sizes: number[] = [];
    for (const [account, days] of [
      ['young', 10],
      ['old', 100],
    ] as const) {
      await history(account, days, 50);
      expect(await pruner.prune(account, now)).toBe((days - kept) * 50);
      sizes.push(await rows(account));
      expect(await store.unfinishedMessages(account)).toEqual(['cut-short']);
    }
    // Both brackets of each message kept, and the unfinished one: the same log for both ages.
    expect(sizes).toEqual([kept * 50 * 2 + 1, kept * 50 * 2 + 1]);
  });

  it('prunes after a commit at most once an hour per account', async () => {
    const pruner = new CommitLogPruner(store, createLogger('silent'));
    await history('hourly', 12, 10);
    pruner.afterCommit('hourly', now);
    await pruner.idle();
    expect(await rows('hourly')).toBe(8 * 10 * 2 + 1);
    // A day later in the log's clock, but within the hour for the pruner: nothing happens.
    await history('hourly', 12, 10);
    pruner.afterCommit('hourly', now + COMMIT_LOG_PRUNE_EVERY_MS - 1);
    await pruner.idle();
    expect(await rows('hourly')).toBeGreaterThan(8 * 10 * 2 + 1);
    pruner.afterCommit('hourly', now + COMMIT_LOG_PRUNE_EVERY_MS);
    await pruner.idle();
    expect(await store.unfinishedMessages('hourly')).toEqual(['cut-short']);
  });
});
