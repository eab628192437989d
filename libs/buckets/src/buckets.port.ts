import type { Readable } from 'node:stream';
import type { DriverHealth } from '@cdp/contracts';

/** The three object-storage locations of the spec: uploads to ingest, a scratch space, and exports. */
export type BucketName = 'incoming' | 'scratch' | 'export';

export interface ObjectStat {
  size: number;
  /** Changes whenever the object is written again (modification time, or the S3 ETag). */
  version: string;
  /** A digest of the content where the store keeps one (S3's ETag). */
  etag?: string;
}

/** An object as a listing shows it: its key, with its size and version. */
export interface ListedObject extends ObjectStat {
  key: string;
}

export abstract class Buckets {
  /** Writes an object whole: readers never see a partly written object. */
  abstract write(bucket: BucketName, key: string, data: Buffer | string | Readable): Promise<void>;
  /**
   * Moves a finished local file into the bucket (the file is gone afterwards): a rename where the
   * bucket is a directory on the same disk, an upload elsewhere. Readers never see it partly written.
   */
  abstract moveIn(bucket: BucketName, key: string, file: string): Promise<void>;
  abstract read(bucket: BucketName, key: string): Readable;
  /** Keys below a prefix, sorted. */
  abstract list(bucket: BucketName, prefix: string): Promise<string[]>;
  /**
   * Objects below a prefix, sorted by key, each with what `stat` tells of it, from the listing itself
   * where the store lists sizes and versions (S3): no request per object.
   */
  abstract listObjects(bucket: BucketName, prefix: string): Promise<ListedObject[]>;
  abstract remove(bucket: BucketName, key: string): Promise<void>;
  /** Size and version of a whole object (undefined when there is none); `etag` where the store has one. */
  abstract stat(bucket: BucketName, key: string): Promise<ObjectStat | undefined>;
  /**
   * A URL a client may `PUT` the object to until it expires, where the store signs such URLs itself
   * (S3); undefined where it cannot (local directories: the API serves a signed URL of its own).
   */
  abstract presignPut(bucket: BucketName, key: string, expiresSeconds: number): Promise<string | undefined>;
  /**
   * A URL a client may `GET` the object from until it expires, where the store signs such URLs itself
   * (S3); undefined where it cannot (local directories: the console serves a signed URL of its own).
   */
  abstract presignGet(bucket: BucketName, key: string, expiresSeconds: number): Promise<string | undefined>;
  abstract health(): Promise<DriverHealth>;
}

/** Keys are `/`-separated relative paths; `..`, empty segments and absolute paths are refused. */
export function checkKey(key: string): string[] {
  const parts = key.split('/');
  if (
    !key ||
    key.startsWith('/') ||
    parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\0'))
  ) {
    throw new Error(`not a valid object key: ${JSON.stringify(key)}`);
  }
  return parts;
}
