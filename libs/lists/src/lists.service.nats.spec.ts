import { randomBytes } from 'node:crypto';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { loadConfig } from '@cdp/config';
import { NatsKvMetadataStore } from '@cdp/metadata/nats';
import { ListsService } from './lists.service.js';

/**
 * Two API replicas, each with its own NATS connection, sharing the lists in JetStream KV. Runs against
 * the NATS server of the machine (NATS_URL or 127.0.0.1:4222); it must be up under CI.
 */
describe('ListsService on JetStream KV, two replicas', () => {
  const prefix = `t${randomBytes(4).toString('hex')}`;
  let one: NatsConnection;
  let two: NatsConnection;
  let a: ListsService;
  let b: ListsService;

  beforeAll(async () => {
    one = await connect({ servers: loadConfig().natsServers });
    two = await connect({ servers: loadConfig().natsServers });
    a = new ListsService(new NatsKvMetadataStore(one, { replicas: 1, prefix }));
    b = new ListsService(new NatsKvMetadataStore(two, { replicas: 1, prefix }));
  });
  afterAll(async () => {
    const kvm = new Kvm(one);
    for await (const status of kvm.list()) {
      if (status.bucket.startsWith(`${prefix}_`)) await (await kvm.open(status.bucket)).destroy();
    }
    await one.close();
    await two.close();
  });

  it('of one name created on both at once, exactly one creation wins', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).create('acc1', 'Same Name')),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((await b.all('acc1', 'x')).map((l) => l.list_id)).toEqual(['svc_all', 'same_name']);
  });

  it('of different names created on both at once, every one is kept with its own id', async () => {
    const names = ['a b', 'a-b', 'A.B', 'c', 'd', 'e'];
    const created = await Promise.all(names.map((name, i) => (i % 2 ? a : b).create('acc2', name)));
    expect(new Set(created.map((l) => l.list_id)).size).toBe(names.length);
    expect(
      created
        .filter((l) => l.list_id.startsWith('a_b'))
        .map((l) => l.list_id)
        .sort(),
    ).toEqual(['a_b', 'a_b_2', 'a_b_3']);
    expect(await a.all('acc2', 'x')).toHaveLength(names.length + 1);
  });

  it('a rename racing a creation of the same name: exactly one gets the name', async () => {
    await a.create('acc3', 'Old');
    const results = await Promise.allSettled([a.rename('acc3', 'old', 'Fresh'), b.create('acc3', 'fresh')]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const names = (await a.all('acc3', 'x')).map((l) => l.name.toLowerCase());
    expect(names.filter((n) => n === 'fresh')).toHaveLength(1);
  });
});
