import { EmbeddedPlatform } from './embedded.js';
import { eventually } from './eventually.js';
import type { ScaledPlatform } from './scaled.js';

/** A read of one account's store, as a check makes it. */
export type StoreQuery = <T>(sql: string, params?: Record<string, unknown>) => Promise<T[]>;
/** A read of any account's store (a suite that looks at several accounts at once). */
export type AccountsQuery = <T>(
  account: string,
  sql: string,
  params?: Record<string, unknown>,
) => Promise<T[]>;
export type StoreCheck = (query: StoreQuery) => Promise<void>;

/** How long an embedded read is polled for (and how often), or `poll: false` to read once. */
export interface ReadOptions {
  timeoutMs?: number;
  everyMs?: number;
  poll?: boolean;
}

/**
 * The one way a test reads the store, on either wiring. Embedded: at once, in the test's process; the
 * read is polled until it returns something other than false (the store is written a moment after the
 * API answered; `{ poll: false }` reads once). Scaled out, chDB belongs to the processor: once the API
 * reports nothing left to process, the processor is stopped for the read (ScaledPlatform.withStore)
 * and the read runs once, everything acknowledged being stored by then.
 */
export async function readStores<T>(
  p: EmbeddedPlatform | ScaledPlatform,
  read: (query: AccountsQuery) => Promise<T>,
  { timeoutMs = 60_000, everyMs = 25, poll = true }: ReadOptions = {},
): Promise<Exclude<T, false>> {
  if (p instanceof EmbeddedPlatform) {
    const query: AccountsQuery = (account, sql, params) => p.query(account, sql, params);
    if (poll) return eventually(() => read(query), timeoutMs, everyMs);
    return read(query) as Promise<Exclude<T, false>>;
  }
  await eventually(async () => (await p.pending()) === 0, timeoutMs);
  const value = await p.withStore((store) =>
    read((account, sql, params) => store.query(account, sql, params)),
  );
  if (value === false) throw new Error('the store read found its condition false with everything processed');
  return value as Exclude<T, false>;
}

/** readStores for one account. */
export function readStore<T>(
  p: EmbeddedPlatform | ScaledPlatform,
  account: string,
  read: (query: StoreQuery) => Promise<T>,
  options?: ReadOptions,
): Promise<Exclude<T, false>> {
  return readStores(p, (query) => read((sql, params) => query(account, sql, params)), options);
}

/** `SELECT count() AS n ...`'s n, as a number (the engine answers UInt64 as a string). */
export async function countOf(
  query: StoreQuery,
  sql: string,
  params?: Record<string, unknown>,
): Promise<number> {
  return Number((await query<{ n: number | string }>(sql, params))[0]?.n ?? 0);
}

/**
 * Checks of the store, on both wirings. Embedded, a check runs at once (polled until it holds).
 * Scaled out, reading the store means stopping the processor, so the checks are kept and run together
 * by `runKept`, in the suite's last test.
 */
export class StoreChecks {
  private readonly kept: { test: string; check: StoreCheck }[] = [];

  constructor(
    private readonly platform: () => EmbeddedPlatform | ScaledPlatform,
    private readonly account: () => string,
  ) {}

  async check(check: StoreCheck): Promise<void> {
    const p = this.platform();
    if (p instanceof EmbeddedPlatform) {
      await readStore(p, this.account(), (query) => check(query).then(() => true), { timeoutMs: 15_000 });
      return;
    }
    this.kept.push({ test: expect.getState().currentTestName ?? 'a test', check });
  }

  /** Runs the checks kept on the scaled-out wiring, once each; returns how many ran. */
  async runKept(): Promise<number> {
    const p = this.platform();
    const kept = this.kept.splice(0);
    if (p instanceof EmbeddedPlatform || kept.length === 0) return 0;
    const failures = await readStore(p, this.account(), async (query) => {
      const failed: string[] = [];
      for (const { test, check } of kept) {
        try {
          await check(query);
        } catch (err) {
          failed.push(`${test}:\n${err instanceof Error ? err.message : String(err)}`);
        }
      }
      return failed;
    });
    if (failures.length) throw new Error(`store checks failed:\n\n${failures.join('\n\n')}`);
    return kept.length;
  }
}
