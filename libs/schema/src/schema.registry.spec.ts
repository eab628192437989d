import { mkdtempSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { loadConfig } from '@cdp/config';
import { FileMetadataStore, NatsKvMetadataStore } from '@cdp/metadata';
import { schemaRegistryContract } from './schema-registry.contract.js';

// The file store serves one process: both "replicas" share its one instance, as the embedded wiring does.
schemaRegistryContract('the file metadata store', () => {
  const store = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-schema-')));
  return { replicas: [store, store] };
});

/** JetStream KV on the machine's NATS server; two stores, as two API processes hold. */
let nc: NatsConnection;
const prefixes: string[] = [];
beforeAll(async () => {
  nc = await connect({ servers: loadConfig().natsUrl });
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
