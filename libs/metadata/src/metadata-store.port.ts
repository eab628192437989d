import type { DriverHealth } from '@cdp/contracts';

export interface Versioned<T> {
  key: string;
  value: T;
  /** Changes with every write; `update` succeeds only against the revision it read. */
  revision: number;
}

export class MetadataConflictError extends Error {
  override name = 'MetadataConflictError';
}

/**
 * Small, durable, strongly consistent records (accounts, keys, lists, schema, export records),
 * grouped in buckets. Create-if-absent and compare-and-set give uniqueness even with several API
 * replicas writing at once.
 */
export abstract class MetadataStore {
  abstract get<T>(bucket: string, key: string): Promise<Versioned<T> | undefined>;
  /** Fails with MetadataConflictError when the key exists. */
  abstract create<T>(bucket: string, key: string, value: T): Promise<number>;
  /** Fails with MetadataConflictError when the record changed since `revision` was read. */
  abstract update<T>(bucket: string, key: string, value: T, revision: number): Promise<number>;
  abstract list<T>(bucket: string): Promise<Versioned<T>[]>;
  /** Removes the record for good (nothing of it is kept); removing a missing key does nothing. */
  abstract delete(bucket: string, key: string): Promise<void>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}

/** What `updateWithRetry`'s `compute` answers to write nothing: the record is left as it was read. */
export const LEAVE_AS_IS: unique symbol = Symbol('leave the record as it is');

export interface UpdateRetryOptions {
  /** How many conflicts to meet before giving up with the last MetadataConflictError (default: no limit). */
  attempts?: number;
}

/**
 * The compare-and-set loop every read-modify-write on one record needs: reads the record, computes
 * the value to write from it (`undefined` when absent: then it is created), writes it against the
 * revision read, and on MetadataConflictError (another writer came between) starts again on what that
 * writer left. `compute` may therefore run more than once; an error it throws ends the loop. A
 * `compute` that answers LEAVE_AS_IS writes nothing, and the call answers undefined.
 */
export function updateWithRetry<T>(
  store: MetadataStore,
  bucket: string,
  key: string,
  compute: (current: Versioned<T> | undefined) => T,
  options?: UpdateRetryOptions,
): Promise<Versioned<T>>;
export function updateWithRetry<T>(
  store: MetadataStore,
  bucket: string,
  key: string,
  compute: (current: Versioned<T> | undefined) => T | typeof LEAVE_AS_IS,
  options?: UpdateRetryOptions,
): Promise<Versioned<T> | undefined>;
export async function updateWithRetry<T>(
  store: MetadataStore,
  bucket: string,
  key: string,
  compute: (current: Versioned<T> | undefined) => T | typeof LEAVE_AS_IS,
  { attempts = Infinity }: UpdateRetryOptions = {},
): Promise<Versioned<T> | undefined> {
  for (let conflicts = 1; ; conflicts++) {
    const found = await store.get<T>(bucket, key);
    const value = compute(found);
    if (value === LEAVE_AS_IS) return undefined;
    try {
      const revision = found
        ? await store.update(bucket, key, value, found.revision)
        : await store.create(bucket, key, value);
      return { key, value, revision };
    } catch (err) {
      if (!(err instanceof MetadataConflictError) || conflicts >= attempts) throw err;
    }
  }
}
