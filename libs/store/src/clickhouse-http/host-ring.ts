/**
 * Several ClickHouse hosts behind one transport (`CLICKHOUSE_URL=http://ch1:8123,http://ch2:8123`):
 * calls take the hosts in turn, and a call whose host cannot be reached goes to the next one. Only
 * "could not reach it" moves a call on: an error the server answered with is the answer. Re-sending an
 * insert is safe on a replicated cluster: the replicas share its deduplication token through Keeper, so
 * an insert that did land before its connection broke is dropped the second time.
 */

/** The hosts of a comma-separated URL list, in order; at least one. */
export function hostUrls(list: string): string[] {
  const urls = list
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  if (urls.length === 0) throw new Error('CLICKHOUSE_URL names no host');
  for (const url of urls) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new Error(`CLICKHOUSE_URL: not an http(s) URL: ${url}`);
  }
  return urls;
}

/** Network failures that mean the host did not take the call (refused, unreachable, dropped, silent). */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
]);

export function unreachable(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNREACHABLE.has(code)) return true;
    const message = e instanceof Error ? e.message : '';
    if (/socket hang up|Timeout error|connect ECONNREFUSED/.test(message)) return true;
  }
  return false;
}

export class HostRing<C> {
  private next = 0;

  constructor(readonly hosts: readonly C[]) {
    if (hosts.length === 0) throw new Error('a host ring needs a host');
  }

  /** Runs the call on the next host in turn, moving on to the others while hosts cannot be reached. */
  async call<T>(run: (host: C) => Promise<T>): Promise<T> {
    const start = this.next;
    this.next = (this.next + 1) % this.hosts.length;
    let last: unknown;
    for (let i = 0; i < this.hosts.length; i++) {
      try {
        return await run(this.hosts[(start + i) % this.hosts.length]!);
      } catch (err) {
        if (!unreachable(err)) throw err;
        last = err;
      }
    }
    throw last;
  }

  /** Every host, for what must reach each one (closing). */
  all(): readonly C[] {
    return this.hosts;
  }
}
