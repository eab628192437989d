import { EmbeddedPlatform } from './embedded.js';
import { eventually } from './eventually.js';
import type { Platform } from './wirings.js';

/** A read of one account's store, as a check makes it. */
export type StoreQuery = <T>(sql: string, params?: Record<string, unknown>) => Promise<T[]>;
/** A read of any account's store (a suite that looks at several accounts at once). */
export type AccountsQuery = <T>(
  account: string,
  sql: string,
  params?: Record<string, unknown>,
) => Promise<T[]>;
export type StoreCheck = (query: StoreQuery) => Promise<void>;

export interface ReadOptions {
  /**
   * How long each wait may take: (scaled out) the API reporting nothing left to process, then the read
   * holding (returning something other than false without throwing). Default 60 s.
   */
  timeoutMs?: number;
  /** Between tries (default 25 ms embedded, 500 ms scaled out, where a try restarts the processor). */
  everyMs?: number;
  /** Read once, after the drain: for a read whose failure is the test's answer, not a wait. */
  once?: boolean;
}

/**
 * The one way a suite reads the store by hand, on either wiring (test/support/wirings.ts). `read` is
 * polled until it returns something other than false (that value is returned), as `eventually` polls,
 * or run once with `once`. Embedded, the store is in the test's process and read there at once.
 * Scaled out, chDB belongs to the processor: first the API must report nothing left to process, then
 * each try stops the processor, reads and starts it again (ScaledPlatform.withStore), so a scaled read
 * that has to be retried costs a processor restart a try.
 */
export async function readStores<T>(
  p: Platform,
  read: (query: AccountsQuery) => Promise<T>,
  { timeoutMs = 60_000, everyMs, once = false }: ReadOptions = {},
): Promise<Exclude<T, false>> {
  const readNow = async (): Promise<T> => {
    if (p instanceof EmbeddedPlatform) return read((account, sql, params) => p.query(account, sql, params));
    return p.withStore((store) => read((account, sql, params) => store.query(account, sql, params)));
  };
  if (!(p instanceof EmbeddedPlatform)) {
    await eventually(async () => (await p.pending()) === 0, timeoutMs, 100, {
      timeoutMessage: () => 'the processor did not finish its work before the store read',
    });
  }
  if (once) {
    const value = await readNow();
    if (value === false) throw new Error('the store read found its condition false');
    return value as Exclude<T, false>;
  }
  return eventually(readNow, timeoutMs, everyMs ?? (p instanceof EmbeddedPlatform ? 25 : 500));
}

/** `readStores` of one account's store. */
export function readStore<T>(
  p: Platform,
  account: string,
  read: (query: StoreQuery) => Promise<T>,
  options?: ReadOptions,
): Promise<Exclude<T, false>> {
  return readStores(p, (query) => read((sql, params) => query(account, sql, params)), options);
}

/** `SELECT count() AS n ...`'s n as a number (the engine answers a UInt64 as a string). */
export async function countOf(
  query: StoreQuery,
  sql: string,
  params?: Record<string, unknown>,
): Promise<number> {
  return Number((await query<{ n: number | string }>(sql, params))[0]?.n ?? 0);
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
      await readStore(p, account, (query) => check(query).then(() => true), { timeoutMs: 15_000 });
      return;
    }
    this.kept.push({ test: expect.getState().currentTestName ?? 'a test', check });
  }

  /** Runs the checks kept on the scaled-out wiring, once each; returns how many ran. */
  async runKept(): Promise<number> {
    const { platform: p, account } = this.target();
    const kept = this.kept.splice(0);
    if (p instanceof EmbeddedPlatform || kept.length === 0) return 0;
    // All the kept checks in one read: each scaled-out read restarts the processor.
    const failures = await readStore(
      p,
      account,
      async (query) => {
        const failed: string[] = [];
        for (const { test, check } of kept) {
          try {
            await check(query);
          } catch (err) {
            failed.push(`${test}:\n${err instanceof Error ? err.message : String(err)}`);
          }
        }
        return failed;
      },
      { once: true },
    );
    if (failures.length) throw new Error(`store checks failed:\n\n${failures.join('\n\n')}`);
    return kept.length;
  }
}
