import { mkdtempSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { loadConfig } from '@cdp/config';
import { FileMetadataStore } from '@cdp/metadata/file';
import { NatsKvMetadataStore } from '@cdp/metadata/nats';
import { OutageMetadataStore } from '@cdp/metadata';
import { schemaRegistryContract } from './schema-registry.contract.js';
import { SCHEMA_CACHE_MS, SchemaRegistry } from './schema.registry.js';
import type { NewObject } from './schema.validation.js';

// The file store serves one process: both "replicas" share its one instance, as the embedded wiring does.
schemaRegistryContract('the file metadata store', () => {
  const store = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-schema-')));
  return { replicas: [store, store] };
});

/** JetStream KV on the machine's NATS server; two stores, as two API processes hold. */
let nc: NatsConnection;
const prefixes: string[] = [];
beforeAll(async () => {
  nc = await connect({ servers: loadConfig().natsServers });
});
afterAll(async () => {
  const kvm = new Kvm(nc);
  for await (const status of kvm.list())
    if (prefixes.some((p) => status.bucket.startsWith(`${p}_`)))
      await (await kvm.open(status.bucket)).destroy();
  await nc.close();
});

schemaRegistryContract('NATS KV', () => {
  const prefix = `t${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  return {
    replicas: [
      new NatsKvMetadataStore(nc, { replicas: 1, prefix }),
      new NatsKvMetadataStore(nc, { replicas: 1, prefix }),
    ],
  };
});

describe('the schema cache of a replica', () => {
  let store: FileMetadataStore;
  let shared: OutageMetadataStore;
  let t: number;
  let replica: SchemaRegistry;
  let other: SchemaRegistry;
  const stores: NewObject = {
    name: 'stores',
    display_name: 'Stores',
    fields: [{ name: 'store_id', type: 'string', display_name: 'Store ID', primary: true }],
  };
  beforeEach(() => {
    store = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-schema-cache-')));
    shared = new OutageMetadataStore(store);
    t = 1_000_000;
    replica = new SchemaRegistry(shared, () => t);
    other = new SchemaRegistry(store);
  });
  afterEach(() => store.close());

  it('honours an object created on another replica within SCHEMA_CACHE_MS; `fresh` at once', async () => {
    expect((await replica.read('acc')).object('stores')).toBeUndefined();
    await other.createObject('acc', stores);
    t += SCHEMA_CACHE_MS;
    expect((await replica.read('acc')).object('stores')).toBeUndefined();
    expect((await replica.read('acc', true)).object('stores')).toBeDefined();
    t += SCHEMA_CACHE_MS + 1;
    await other.createFields('acc', 'stores', { name: 'city', type: 'text', display_name: 'City' });
    t += SCHEMA_CACHE_MS + 1;
    expect((await replica.read('acc')).revision).toBe((await other.read('acc', true)).revision);
  });

  it('reads the store once for concurrent reads of one account', async () => {
    await other.createObject('acc', stores);
    const all = await Promise.all(Array.from({ length: 20 }, () => replica.read('acc')));
    expect(new Set(all.map((s) => s.revision)).size).toBe(1);
    expect(shared.gets).toBe(1);
  });

  it('answers with the last schema read while the store is unreachable; an unread account is 503', async () => {
    await other.createObject('acc', stores);
    expect((await replica.read('acc')).object('stores')).toBeDefined();
    shared.reachable = false;
    t += 60_000;
    expect((await replica.read('acc')).object('stores')).toBeDefined();
    await expect(replica.read('unread')).rejects.toMatchObject({ status: 503 });
  });
});
