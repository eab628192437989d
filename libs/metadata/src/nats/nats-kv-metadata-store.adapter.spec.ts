import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection, type Payload, type RequestOptions } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { metadataStoreContract } from '../metadata-store.contract.js';
import { NatsKvMetadataStore } from './nats-kv-metadata-store.adapter.js';
import { loadConfig } from '@cdp/config';
import { EngineUnavailableError } from '@cdp/contracts';

/** Runs against the NATS server of the machine (NATS_URL or 127.0.0.1:4222); it must be up under CI. */
const url = loadConfig().natsServers;
let nc: NatsConnection;
const prefixes: string[] = [];

beforeAll(async () => {
  nc = await connect({ servers: url });
});
afterAll(async () => {
  const kvm = new Kvm(nc);
  for await (const status of kvm.list()) {
    if (prefixes.some((p) => status.bucket.startsWith(`${p}_`)))
      await (await kvm.open(status.bucket)).destroy();
  }
  await nc.close();
});

metadataStoreContract('NATS KV', () => {
  const prefix = `t${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  return {
    store: new NatsKvMetadataStore(nc, { replicas: 1, prefix }),
    reopen: () => new NatsKvMetadataStore(nc, { replicas: 1, prefix }),
  };
});

it('keeps keys with characters KV does not allow', async () => {
  const prefix = `t${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  const store = new NatsKvMetadataStore(nc, { replicas: 1, prefix });
  await store.create('names', 'Spring Sale: 50%! v2.0. a=b', { ok: true });
  expect((await store.get('names', 'Spring Sale: 50%! v2.0. a=b'))?.value).toEqual({ ok: true });
  expect((await store.list('names')).map((v) => v.key)).toEqual(['Spring Sale: 50%! v2.0. a=b']);
});

it('refuses at once while the connection is down, instead of waiting for a request timeout', async () => {
  const prefix = `t${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  let up = true;
  const store = new NatsKvMetadataStore(nc, { replicas: 1, prefix, connected: () => up });
  await store.create('names', 'a', { ok: true });
  up = false;
  await expect(store.get('names', 'a')).rejects.toBeInstanceOf(EngineUnavailableError);
  await expect(store.list('names')).rejects.toBeInstanceOf(EngineUnavailableError);
  await expect(store.create('names', 'b', {})).rejects.toBeInstanceOf(EngineUnavailableError);
  up = true;
  expect((await store.get('names', 'a'))?.value).toEqual({ ok: true });
});

it('reads a key back while the replica that answers direct reads does not hold it yet', async () => {
  // A replica catching up (one just added when a bucket moves to R3, or the one a write's quorum left
  // behind) answers direct gets with "no such key" for a while. No server here stays in that state on
  // demand, so the store's connection sends its direct gets to a replica that lacks every key: the
  // same bucket of another deployment, which is empty. Reads through the stream's leader go through.
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const empty = `t${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix, empty);
  await new NatsKvMetadataStore(nc, { replicas: 1, prefix: empty }).list('accounts');
  const direct = `$JS.API.DIRECT.GET.KV_${prefix}_accounts.$KV.${prefix}_accounts.`;
  const lagging = new Proxy(nc, {
    get: (target, name) =>
      name === 'request'
        ? (subject: string, ...rest: [Payload?, RequestOptions?]) =>
            target.request(
              subject.startsWith(direct)
                ? `$JS.API.DIRECT.GET.KV_${empty}_accounts.$KV.${empty}_accounts.${subject.slice(direct.length)}`
                : subject,
              ...rest,
            )
        : Reflect.get(target, name, target),
  });
  const store = new NatsKvMetadataStore(lagging, { replicas: 1, prefix });
  await store.create('accounts', 'acme', { name: 'Acme' });
  expect(
    await (await new Kvm(lagging).open(`${prefix}_accounts`, { allow_direct: true })).get('acme'),
  ).toBeNull();

  expect((await store.get('accounts', 'acme'))?.value).toEqual({ name: 'Acme' });
  expect((await store.list('accounts')).map((v) => v.key)).toEqual(['acme']);
});
