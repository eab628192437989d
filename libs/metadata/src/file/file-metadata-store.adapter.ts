import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { DriverHealth } from '@cdp/contracts';
import { MetadataConflictError, MetadataStore, type Versioned } from '../metadata-store.port.js';

type Bucket = Map<string, { value: unknown; revision: number }>;

/**
 * The embedded metadata store: each bucket is a JSON file in the data directory, rewritten atomically
 * (write, fsync, rename) on every change, with writes serialised in this process. Metadata is small
 * and rarely written, so whole-file rewrites cost nothing that matters.
 */
export class FileMetadataStore extends MetadataStore {
  private readonly buckets = new Map<string, Bucket>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly dir: string) {
    super();
    mkdirSync(dir, { recursive: true });
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
      const entries = JSON.parse(readFileSync(join(dir, file), 'utf8')) as [
        string,
        { value: unknown; revision: number },
      ][];
      this.buckets.set(file.slice(0, -5), new Map(entries));
    }
  }

  private bucket(name: string): Bucket {
    if (!/^[a-z0-9_-]+$/.test(name)) throw new Error(`not a bucket name: ${name}`);
    let bucket = this.buckets.get(name);
    if (!bucket) this.buckets.set(name, (bucket = new Map() as Bucket));
    return bucket;
  }

  get<T>(bucket: string, key: string): Promise<Versioned<T> | undefined> {
    const entry = this.bucket(bucket).get(key);
    return Promise.resolve(
      entry ? { key, value: structuredClone(entry.value) as T, revision: entry.revision } : undefined,
    );
  }

  create<T>(bucket: string, key: string, value: T): Promise<number> {
    return this.serialised(async () => {
      const b = this.bucket(bucket);
      if (b.has(key)) throw new MetadataConflictError(`${bucket}/${key} already exists`);
      return this.write(bucket, b, key, value, 1);
    });
  }

  update<T>(bucket: string, key: string, value: T, revision: number): Promise<number> {
    return this.serialised(async () => {
      const b = this.bucket(bucket);
      const current = b.get(key);
      if (!current || current.revision !== revision) {
        throw new MetadataConflictError(`${bucket}/${key} changed since revision ${revision}`);
      }
      return this.write(bucket, b, key, value, revision + 1);
    });
  }

  delete(bucket: string, key: string): Promise<void> {
    return this.serialised(async () => {
      const b = this.bucket(bucket);
      if (!b.has(key)) return;
      const next = new Map(b);
      next.delete(key);
      await this.persist(bucket, next);
    });
  }

  list<T>(bucket: string): Promise<Versioned<T>[]> {
    return Promise.resolve(
      [...this.bucket(bucket)].map(([key, e]) => ({
        key,
        value: structuredClone(e.value) as T,
        revision: e.revision,
      })),
    );
  }

  private async write(
    name: string,
    bucket: Bucket,
    key: string,
    value: unknown,
    revision: number,
  ): Promise<number> {
    const next = new Map(bucket);
    next.set(key, { value: structuredClone(value), revision });
    await this.persist(name, next);
    return revision;
  }

  /** Writes the bucket's file atomically; only a durable write changes what readers see. */
  private async persist(name: string, next: Bucket): Promise<void> {
    const file = join(this.dir, `${name}.json`);
    const handle = await open(`${file}.tmp`, 'w');
    try {
      await handle.writeFile(JSON.stringify([...next]));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(`${file}.tmp`, file);
    this.buckets.set(name, next);
  }

  private serialised<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work, work);
    this.chain = run.catch(() => undefined);
    return run;
  }

  health(): Promise<DriverHealth> {
    return Promise.resolve({ driver: 'file', ready: true });
  }

  close(): Promise<void> {
    return this.chain.then(() => undefined);
  }
}
