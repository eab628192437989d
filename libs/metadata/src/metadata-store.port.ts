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
