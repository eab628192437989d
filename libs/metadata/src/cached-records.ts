import { MetadataCache } from './metadata-cache.js';
import { MetadataStore, updateWithRetry, type Versioned } from './metadata-store.port.js';

export interface CachedRecordsOptions<Doc, V> {
  /** How long a replica uses its copy of a record; another replica's change reaches it within this. */
  ttlMs: number;
  /** What readers get of a key's record (`undefined`: there is none yet, so the default). */
  view: (found: Versioned<Doc> | undefined) => V;
  /** The cache's clock, for tests that move time (MetadataCacheClock). */
  now?: (() => number) | undefined;
}

/**
 * The records of one metadata bucket, one per key (an account's settings, segments, schema), as
 * each replica serves them: reads through a MetadataCache, changes by compare-and-set, the written
 * record becoming this replica's copy at once, so a change is read back by the replica that made it
 * without waiting out the ttl.
 */
export class CachedRecords<Doc, V = Doc> {
  private readonly cache: MetadataCache<V>;
  private readonly view: (found: Versioned<Doc> | undefined) => V;

  constructor(
    private readonly store: MetadataStore,
    private readonly bucket: string,
    { ttlMs, view, now }: CachedRecordsOptions<Doc, V>,
  ) {
    this.view = view;
    this.cache = new MetadataCache({ ttlMs, load: (key) => this.read(key), now });
  }

  /** The key's record as the store holds it now (no cache). */
  async read(key: string): Promise<V> {
    return this.view(await this.store.get<Doc>(this.bucket, key));
  }

  /** A copy at most ttlMs old, or a read of the store with `fresh` (MetadataCache.get: stale while error). */
  cached(key: string, fresh = false): Promise<V> {
    return this.cache.get(key, fresh);
  }

  /** The copy held now, without reading the store. */
  peek(key: string): V | undefined {
    return this.cache.peek(key);
  }

  /**
   * Writes what `compute` makes of the record as read (`updateWithRetry`: run again on a conflict)
   * and keeps the written record as this replica's copy; answers that copy.
   */
  async update(key: string, compute: (found: Versioned<Doc> | undefined) => Doc): Promise<V> {
    const written = this.view(await updateWithRetry<Doc>(this.store, this.bucket, key, compute));
    this.cache.set(key, written);
    return written;
  }
}
