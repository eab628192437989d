import type { DriverHealth } from '@cdp/contracts';
import { MetadataStore, type Versioned } from '../metadata-store.port.js';

/**
 * For tests: a real metadata store whose reads can be cut off, as when its server is unreachable,
 * and counted, to see how often a cache reads through.
 */
export class OutageMetadataStore extends MetadataStore {
  reachable = true;
  gets = 0;

  constructor(private readonly inner: MetadataStore) {
    super();
  }

  private check(): void {
    if (!this.reachable) throw new Error('metadata store unreachable');
  }

  async get<T>(bucket: string, key: string): Promise<Versioned<T> | undefined> {
    this.gets++;
    this.check();
    return this.inner.get<T>(bucket, key);
  }
  async create<T>(bucket: string, key: string, value: T): Promise<number> {
    this.check();
    return this.inner.create(bucket, key, value);
  }
  async update<T>(bucket: string, key: string, value: T, revision: number): Promise<number> {
    this.check();
    return this.inner.update(bucket, key, value, revision);
  }
  async list<T>(bucket: string): Promise<Versioned<T>[]> {
    this.check();
    return this.inner.list<T>(bucket);
  }
  async delete(bucket: string, key: string): Promise<void> {
    this.check();
    return this.inner.delete(bucket, key);
  }
  health(): Promise<DriverHealth> {
    return this.inner.health();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
