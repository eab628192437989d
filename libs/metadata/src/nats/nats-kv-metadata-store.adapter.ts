import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { StorageType } from '@nats-io/jetstream';
import { EngineUnavailableError, type DriverHealth } from '@cdp/contracts';
import { degradedReplicas } from '@cdp/bus/nats';
import { MetadataConflictError, MetadataStore, type Versioned } from '../metadata-store.port.js';

/**
 * Metadata in JetStream key-value buckets (one per metadata bucket, file storage, replicated like the
 * streams). `create` is create-if-absent and `update` compare-and-set on the entry's revision, both
 * decided by the server, so two API replicas can never both win.
 */
export class NatsKvMetadataStore extends MetadataStore {
  private readonly kvm: Kvm;
  private readonly buckets = new Map<string, Promise<BucketHandles>>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: {
      replicas: number;
      prefix?: string;
      /** Whether the connection is up now: while it is not, every call fails at once (no timeout wait). */
      connected?: () => boolean;
    },
  ) {
    super();
    this.kvm = new Kvm(nc);
  }

  private async bucket(name: string): Promise<KV> {
    return (await this.handles(name)).kv;
  }

  private handles(name: string): Promise<BucketHandles> {
    if (!/^[a-z0-9_-]+$/.test(name)) throw new Error(`not a bucket name: ${name}`);
    if (this.options.connected && !this.options.connected())
      return Promise.reject(new EngineUnavailableError('NATS', 'the connection is down'));
    let handles = this.buckets.get(name);
    if (!handles) {
      const full = `${this.options.prefix ?? 'cdp'}_${name}`;
      handles = (async () => {
        const kv = await this.kvm.create(full, {
          history: 1,
          storage: StorageType.File,
          replicas: this.options.replicas,
        });
        return { kv, leader: await this.kvm.open(full, { allow_direct: false }) };
      })();
      handles.catch(() => this.buckets.delete(name));
      this.buckets.set(name, handles);
    }
    return handles;
  }

  /**
   * A direct get, which any replica answers, and on a miss the same read from the stream's leader: a
   * replica that is catching up (one just added, or the one a write's quorum left behind) answers "no
   * such key" for a key written a moment ago, and an account created or moved then would answer 401.
   * Misses are rare (an unknown key, a deleted entry), so the leader sees little of the reads.
   */
  async get<T>(bucket: string, key: string): Promise<Versioned<T> | undefined> {
    const { kv, leader } = await this.handles(bucket);
    const encoded = encodeKey(key);
    let entry = await kv.get(encoded);
    if (!entry || entry.operation !== 'PUT') entry = await leader.get(encoded);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return { key, value: entry.json<T>(), revision: entry.revision };
  }

  async create<T>(bucket: string, key: string, value: T): Promise<number> {
    try {
      return await (await this.bucket(bucket)).create(encodeKey(key), JSON.stringify(value));
    } catch (err) {
      if (isWrongSequence(err)) throw new MetadataConflictError(`${bucket}/${key} already exists`);
      throw err;
    }
  }

  async update<T>(bucket: string, key: string, value: T, revision: number): Promise<number> {
    try {
      return await (await this.bucket(bucket)).update(encodeKey(key), JSON.stringify(value), revision);
    } catch (err) {
      if (isWrongSequence(err))
        throw new MetadataConflictError(`${bucket}/${key} changed since revision ${revision}`);
      throw err;
    }
  }

  /** A purge: the key's history goes too (history is 1 anyway), leaving only the server's marker. */
  async delete(bucket: string, key: string): Promise<void> {
    await (await this.bucket(bucket)).purge(encodeKey(key));
  }

  async list<T>(bucket: string): Promise<Versioned<T>[]> {
    const kv = await this.bucket(bucket);
    const keys: string[] = [];
    for await (const k of await kv.keys()) keys.push(k);
    const out: Versioned<T>[] = [];
    for (const k of keys) {
      const entry = await this.get<T>(bucket, decodeKey(k));
      if (entry) out.push(entry);
    }
    return out;
  }

  async health(): Promise<DriverHealth> {
    if (this.nc.isClosed()) return { driver: 'nats kv', ready: false, detail: 'connection closed' };
    try {
      const degraded = degradedReplicas((await (await this.bucket('accounts')).status()).streamInfo.cluster);
      return { driver: 'nats kv', ready: true, ...(degraded ? { detail: `degraded: ${degraded}` } : {}) };
    } catch (err) {
      return { driver: 'nats kv', ready: false, detail: String(err) };
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * A bucket's handle for writes and direct reads, and one whose reads go to the stream's leader (named
 * apart from @nats-io/kv's own `Bucket` class).
 */
interface BucketHandles {
  kv: KV;
  leader: KV;
}

/**
 * KV keys allow `[-/_=.a-zA-Z0-9]` with `.` separating non-empty tokens; anything else, `.` included,
 * is escaped as `=XX`.
 */
function encodeKey(key: string): string {
  return key.replace(/[^-/_a-zA-Z0-9]/g, (c) => `=${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function decodeKey(key: string): string {
  return key.replace(/=([0-9a-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

function isWrongSequence(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: string };
  return e.api_error?.err_code === 10071 || /wrong last sequence/i.test(e.message ?? '');
}
