import { EmbeddedPlatform } from './embedded.js';
import { eventually } from './eventually.js';
import type { Platform } from './wirings.js';

/** A read of one account's store, as a check makes it. */
export type StoreQuery = <T>(sql: string, params?: Record<string, unknown>) => Promise<T[]>;
export type StoreCheck = (query: StoreQuery) => Promise<void>;

/**
 * Reads of one account's store made now, on either wiring: in this process embedded; scaled out, with the
 * processor stopped for each read (ScaledPlatform.withStore), so a test polls with it sparingly.
 */
export function storeQuery(p: Platform, account: string): StoreQuery {
  if (p instanceof EmbeddedPlatform) return (sql, params) => p.query(account, sql, params);
  return (sql, params) => p.withStore((store) => store.query(account, sql, params));
}

/** `storeQuery` once the processor has nothing left to do (scaled out: a read stops it). */
export async function drainedStoreQuery(p: Platform, account: string): Promise<StoreQuery> {
  if (!(p instanceof EmbeddedPlatform)) await eventually(async () => (await p.pending()) === 0);
  return storeQuery(p, account);
}

/**
 * Checks of the store, on both wirings. Embedded, a check runs at once (polled until it holds: the
 * store is written a moment after the API answered). Scaled out, chDB belongs to the processor and
 * reading it means stopping the processor (ScaledPlatform.withStore), so the checks are kept and run
 * together by `runKept`, in the suite's last test, after the API reports nothing left to process.
 */
export class StoreChecks {
  private readonly kept: { test: string; check: StoreCheck }[] = [];

  /** `target` names the suite's platform and account when a check runs (a suite may restart its platform). */
  constructor(private readonly target: () => { platform: Platform; account: string }) {}

  async check(check: StoreCheck): Promise<void> {
    const { platform: p, account } = this.target();
    if (p instanceof EmbeddedPlatform) {
      const query = storeQuery(p, account);
      await eventually(() => check(query).then(() => true));
      return;
    }
    this.kept.push({ test: expect.getState().currentTestName ?? 'a test', check });
  }

  /** Runs the checks kept on the scaled-out wiring, once each; returns how many ran. */
  async runKept(): Promise<number> {
    const { platform: p, account } = this.target();
    const kept = this.kept.splice(0);
    if (p instanceof EmbeddedPlatform || kept.length === 0) return 0;
    await eventually(async () => (await p.pending()) === 0, 60_000);
    const failures: string[] = [];
    await p.withStore(async (store) => {
      const query: StoreQuery = (sql, params) => store.query(account, sql, params);
      for (const { test, check } of kept) {
        try {
          await check(query);
        } catch (err) {
          failures.push(`${test}:\n${err instanceof Error ? err.message : String(err)}`);
        }
      }
    });
    if (failures.length) throw new Error(`store checks failed:\n\n${failures.join('\n\n')}`);
    return kept.length;
  }
}
