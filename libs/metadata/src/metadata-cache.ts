import { Inject, Optional } from '@nestjs/common';
import { LRUCache } from 'lru-cache';

/**
 * The clock of the services' metadata caches, injected only by tests that move time; without it the
 * caches use lru-cache's own clock.
 */
export const METADATA_CACHE_CLOCK = Symbol('METADATA_CACHE_CLOCK');

/**
 * The constructor parameter through which a service takes the clock of its metadata cache: injected
 * when METADATA_CACHE_CLOCK is provided, undefined otherwise (a test that builds the service itself
 * passes a clock in its place). Pass it on as the cache's `now`.
 */
export function MetadataCacheClock(): ParameterDecorator {
  return (target, key, index) => {
    Optional()(target, key, index);
    Inject(METADATA_CACHE_CLOCK)(target, key, index);
  };
}

export interface MetadataCacheOptions<V> {
  /** How long a copy is used without reading the metadata store again. */
  ttlMs: number;
  /** Reads the record (or what is derived from it); `undefined` is a value too ("no such record"). */
  load: (key: string) => Promise<V>;
  /** The most keys kept; the least recently used go first. */
  max?: number;
  /**
   * The clock in milliseconds, for tests that move time (must not start at 0: lru-cache reads 0 as
   * "no start"); undefined, lru-cache's own clock.
   */
  now?: (() => number) | undefined;
}

/** lru-cache holds no `undefined`: a box lets "no such record" be cached like any other answer. */
interface Box<V> {
  value: V;
}

/**
 * Copies of metadata records, each used for `ttlMs`. Concurrent misses of one key read the store
 * once (single flight), and while the store is unreachable a key that was read before is answered
 * with its last copy (stale while error); a key never read then fails with the store's error.
 */
export class MetadataCache<V> {
  private readonly lru: LRUCache<string, Box<V>>;

  constructor(options: MetadataCacheOptions<V>) {
    const { ttlMs, load, max = 100_000, now } = options;
    this.lru = new LRUCache<string, Box<V>>({
      max,
      ttl: ttlMs,
      fetchMethod: async (key) => ({ value: await load(key) }),
      allowStaleOnFetchRejection: true,
      noDeleteOnFetchRejection: true,
      // A `set` during a read replaces the copy; the read still answers its own caller.
      ignoreFetchAbort: true,
      // A moved clock must be seen at once, not after lru-cache's 1 ms debounce of `now()`.
      ...(now ? { perf: { now }, ttlResolution: 0 } : {}),
    });
  }

  /** The key's copy, or a read of the store when it is older than the ttl or `fresh` is asked for. */
  async get(key: string, fresh = false): Promise<V> {
    const status: LRUCache.Status<string, Box<V>> = {};
    const box = await this.lru.fetch(key, { forceRefresh: fresh, status });
    if (box === undefined) throw status.fetchError ?? new Error(`no copy of ${key} could be read`);
    return box.value;
  }

  /** The copy held now, without reading the store (even a stale one). */
  peek(key: string): V | undefined {
    return this.lru.peek(key, { allowStale: true })?.value;
  }

  /** A copy this process just wrote: its readers see it at once, for a whole ttl. */
  set(key: string, value: V): void {
    this.lru.set(key, { value });
  }
}
