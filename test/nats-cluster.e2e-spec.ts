import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { ChildApp, freePort } from './support/child-process.js';
import { ClientLoad, isProperRefusal } from './support/client-load.js';
import { NatsCluster } from './support/engines.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import { postWithKey } from './support/api-calls.js';

/**
 * The scaled-out wiring on a 3-node JetStream cluster of the suite's own (started once for the file):
 * NATS_URL as a seed list, replicas found from the cluster, an R1 deployment moved to R3 at boot, and a
 * lost server (the ingest stream's leader) costing no acknowledged record. Each test uses its own
 * stream prefix; ScaledPlatform brings its own Redis and data directory (and a single nats-server the
 * cluster's seed list in NATS_URL overrides, unused).
 */
jest.setTimeout(240_000);

// One wiring: a JetStream cluster is a scaled-out deployment; the embedded wiring has no NATS.
describe('NATS cluster (scaled-out wiring)', () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;
  const platforms: ScaledPlatform[] = [];

  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
    nc = await connect({ servers: cluster.nodes.map((n) => n.url) });
  }, 60_000);
  afterAll(async () => {
    for (const p of platforms) await p.close().catch(() => undefined);
    await nc?.close();
    await cluster?.remove();
  }, 60_000);

  const start = async (env: Record<string, string>) => {
    const p = await ScaledPlatform.start({ NATS_URL: cluster.url, CDP_NATS_STREAM_MAX_MB: '256', ...env });
    platforms.push(p);
    return p;
  };

  /** This deployment's streams and KV buckets, by name, with their replicas. */
  const replicasOf = async (prefix: string): Promise<Record<string, number>> => {
    const jsm = await jetstreamManager(nc);
    const out: Record<string, number> = {};
    for await (const s of jsm.streams.list())
      if (s.config.name.startsWith(`${prefix}_`) || s.config.name.startsWith(`KV_${prefix.toLowerCase()}_`))
        out[s.config.name] = s.config.num_replicas;
    return out;
  };

  /** Until the processor took everything in; what the processes said when it does not. */
  const drained = async (p: ScaledPlatform) => {
    try {
      await eventually(async () => (await p.pending()) === 0, 60_000, 200);
    } catch (err) {
      const tail = (app?: ChildApp) => app?.output().split('\n').slice(-20).join('\n');
      const health = await p.http().get('/health');
      throw new Error(
        `the backlog did not drain: ${JSON.stringify(health.body)}\nprocessor:\n${tail(p.processor)}\napi:\n${tail(p.api)}`,
        { cause: err },
      );
    }
  };

  const sendEvents = (p: ScaledPlatform, key: string, pages: string[]) =>
    p
      .http()
      .post('/v3/events')
      .set('x-api-key', key)
      .send(
        pages.map((page) => ({
          type: 'pageview',
          identifiers: { email: `${page.slice(1).replace(/\//g, '-')}@x.test` },
          data: { page },
        })),
      );

  /** Until the customer an event of `page` created reads back: the processor took the event in. */
  const readable = (p: ScaledPlatform, key: string, page: string) =>
    eventually(
      async () =>
        (
          await p
            .http()
            .get(`/v3/profiles?email=${page.slice(1).replace(/\//g, '-')}@x.test`)
            .set('x-api-key', key)
        ).status === 200,
      60_000,
      200,
    );

  it('connects through a seed list whose first seed is down, and replicates 3 times with no setting', async () => {
    const dead = `nats://127.0.0.1:${await freePort()}`;
    const p = await start({ NATS_URL: `${dead},${cluster.url}`, CDP_NATS_PREFIX: 'SEEDS' });
    const acc = await p.createAccount('seeds');
    expect((await sendEvents(p, acc.publicKey, ['/seeds/1'])).status).toBe(202);

    const replicas = await replicasOf('SEEDS');
    expect(replicas).toMatchObject({ SEEDS_INGEST: 3, SEEDS_DEAD_LETTER: 3, KV_seeds_accounts: 3 });
    expect(Object.values(replicas).every((r) => r === 3)).toBe(true);
    const ready = await p.http().get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.drivers.bus.detail).not.toMatch(/degraded/);
  });

  it('moves an R1 deployment (streams and KV buckets) to R3 when its roles restart without the setting', async () => {
    const p = await start({ CDP_NATS_PREFIX: 'RECON', CDP_NATS_REPLICAS: '1' });
    const acc = await p.createAccount('recon');
    expect((await sendEvents(p, acc.publicKey, ['/recon/before'])).status).toBe(202);
    const before = await replicasOf('RECON');
    expect(Object.keys(before).length).toBeGreaterThanOrEqual(3);
    expect(Object.values(before).every((r) => r === 1)).toBe(true);

    // The API and the processor restart together: one moves the streams, the other waits its turn.
    await p.api.kill('SIGTERM');
    await p.stopProcessor();
    const unset = { CDP_NATS_REPLICAS: '' };
    const started = await Promise.allSettled([
      ChildApp.start('apps/api/src/main.js', { ...p.env(), ...unset }),
      p.startProcessor(unset),
    ]);
    const failed = started.filter((s) => s.status === 'rejected').map((s) => String(s.reason));
    if (failed.length) throw new Error(failed.join('\n\n'));
    p.api = (started[0] as PromiseFulfilledResult<ChildApp>).value;

    const after = await replicasOf('RECON');
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    expect(Object.values(after).every((r) => r === 3)).toBe(true);
    // What was there is still there: the account's key works, and both events are taken in.
    expect((await sendEvents(p, acc.publicKey, ['/recon/after'])).status).toBe(202);
    await readable(p, acc.privateKey, '/recon/before');
    await readable(p, acc.privateKey, '/recon/after');
  });

  it('refuses to boot with a message naming the setting when the ingest stream cannot be placed', async () => {
    // The ingest stream reserves its max_bytes on every replica; the cluster's servers have 8 GB each.
    const dataDir = mkdtempSync(join(tmpdir(), 'cdp-huge-'));
    try {
      const refused = ChildApp.start('apps/processor/src/main.js', {
        ...platforms[0]!.env(),
        CDP_DATA_DIR: dataDir,
        CDP_NATS_PREFIX: 'HUGE',
        CDP_NATS_STREAM_MAX_MB: String(64 * 1024),
      });
      await expect(refused).rejects.toThrow(/HUGE_INGEST.*CDP_NATS_STREAM_MAX_MB.*max_file_store/s);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('ends every customer in acceptance order with three processors, one SIGKILLed and the stream leader killed', async () => {
    const CUSTOMERS = 8;
    const UPDATES = 24;
    const TOGGLE_EVERY = 2;
    // A short ack wait: the killed processor's unacknowledged messages come back to the others soon.
    const p = await start({ CDP_NATS_PREFIX: 'ORDER', CDP_NATS_ACK_WAIT_MS: '1500' });
    const acc = await p.createAccount('order');
    const extraDirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), 'cdp-order-')));
    // Each processor its own chDB directory (chDB is one process's store): the hot state is shared.
    const processors: (ChildApp | undefined)[] = [p.processor];
    const startProcessor = (i: number) =>
      ChildApp.start('apps/processor/src/main.js', { ...p.env(), CDP_DATA_DIR: extraDirs[i - 1]! });
    const started = Date.now();
    try {
      processors.push(await startProcessor(1), await startProcessor(2));
      const list = await postWithKey(p, acc.privateKey, '/v3/lists', { name: 'news' });
      expect(list.status).toBe(201);
      // The account's hot state is opened (a new account is rebuilt from the store, under a lock) before
      // the run: a processor SIGKILLed in the middle of that rebuild would hold the account closed until
      // its lock expires, which is no question of order.
      expect((await sendEvents(p, acc.publicKey, ['/order/warm'])).status).toBe(202);
      await readable(p, acc.privateKey, '/order/warm');

      /** Sends until acknowledged: a 503 (with Retry-After) or a dropped connection is tried again. */
      let refused = 0;
      const send = async (path: string, body: object): Promise<void> => {
        for (let attempt = 0; attempt < 100; attempt++) {
          const res = await fetch(p.url(path), {
            method: 'POST',
            headers: { 'x-api-key': acc.publicKey, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          }).catch(() => undefined);
          if (res && res.status < 300) return;
          if (res && res.status !== 503) throw new Error(`${path}: ${res.status} ${await res.text()}`);
          refused++;
          await new Promise((r) => setTimeout(r, 200));
        }
        throw new Error(`${path} was never acknowledged`);
      };
      let acknowledged = 0;
      const customer = async (c: number) => {
        const email = `order-${c}@x.test`;
        for (let v = 1; v <= UPDATES; v++) {
          await send('/v3/profiles', { attributes: { email, first_name: `v${v}` } });
          acknowledged++;
          if (v % TOGGLE_EVERY === 0) {
            // Toggles end unsubscribed: the last one (v = UPDATES) says false.
            const subscribed = (v / TOGGLE_EVERY) % 2 === 1;
            await send('/v3/lists/subscriptions', { list_id: 'news', email, subscribed });
            acknowledged++;
          }
        }
      };
      const total = CUSTOMERS * (UPDATES + UPDATES / TOGGLE_EVERY);
      const reached = (share: number) =>
        eventually(() => Promise.resolve(acknowledged >= total * share), 120_000, 20);
      const run = Promise.all(Array.from({ length: CUSTOMERS }, (_, c) => customer(c)));
      const failed = run.then(
        () => undefined,
        (err: unknown) => err,
      );

      await reached(0.25);
      await processors[1]!.kill('SIGKILL');
      const jsm = await jetstreamManager(nc);
      const leader = (await jsm.streams.info('ORDER_INGEST')).cluster?.leader;
      expect(leader).toBeDefined();
      await reached(0.4);
      const victim = cluster.node(leader!);
      await victim.down('SIGKILL');
      await reached(0.6);
      await victim.up();
      await cluster.waitForJetStream();
      processors[1] = await startProcessor(1);
      await run;
      expect(await failed).toBeUndefined();
      await drained(p);

      const wrong: string[] = [];
      await eventually(async () => {
        wrong.length = 0;
        for (let c = 0; c < CUSTOMERS; c++) {
          const email = `order-${c}@x.test`;
          const prof = await p.http().get(`/v3/profiles?email=${email}`).set('x-api-key', acc.privateKey);
          const subs = await p
            .http()
            .get(`/v3/lists/subscriptions?email=${email}`)
            .set('x-api-key', acc.privateKey);
          const news = (
            subs.body.subscriptions as { list_id: string; subscribed: boolean }[] | undefined
          )?.find((s) => s.list_id === 'news');
          const name = prof.body.attributes?.first_name as string | undefined;
          if (name !== `v${UPDATES}` || news?.subscribed !== false)
            wrong.push(`${email}: first_name ${name}, news ${news?.subscribed}`);
        }
        return wrong.length === 0;
      }, 30_000).catch(() => undefined);
      console.log(
        `ordering: ${CUSTOMERS} customers × ${total / CUSTOMERS} sequential updates (${total} acknowledged, ` +
          `${refused} refusals retried) over 3 processors; a processor and the ingest leader ${victim.name} ` +
          `SIGKILLed and restarted; ${CUSTOMERS - wrong.length}/${CUSTOMERS} right in ${Date.now() - started} ms`,
      );
      expect(wrong).toEqual([]);
    } finally {
      for (const proc of processors.slice(1)) await proc?.kill('SIGTERM').catch(() => undefined);
      for (const dir of extraDirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('loses no acknowledged record when the ingest stream leader dies, with only brief 503s', async () => {
    const p = await start({ CDP_NATS_PREFIX: 'HA' });
    const acc = await p.createAccount('ha');
    const jsm = await jetstreamManager(nc);
    const ingest = (): Promise<StreamInfo> => jsm.streams.info('HA_INGEST');
    const leader = (await ingest()).cluster?.leader;
    expect(leader).toBeDefined();

    const load = new ClientLoad({ apis: [p.api.baseUrl], publicKey: acc.publicKey }, 'ha');
    load.start(4);
    await load.acceptedMore(20);
    const victim = cluster.node(leader!);
    const killedAt = Date.now();
    await victim.down('SIGKILL');
    // Another leader takes over, and the health says the stream runs one replica short.
    await eventually(async () => {
      const info = await ingest();
      return info.cluster?.leader !== undefined && info.cluster.leader !== victim.name;
    }, 30_000);
    await eventually(async () => {
      const ready = await p.http().get('/health/ready');
      return (
        ready.status === 200 && new RegExp(`degraded.*${victim.name}`).test(ready.body.drivers.bus.detail)
      );
    }, 30_000);
    await load.acceptedMore(40);
    await victim.up();
    await cluster.waitForJetStream();
    await load.acceptedMore(20);
    await load.stop();

    expect(load.anomalies).toEqual([]);
    const unavailable = load.refusals.filter((a) => a.status === 503);
    expect(unavailable.every(isProperRefusal)).toBe(true);
    // Refusals are confined to the few seconds after the kill (a new leader, the client's reconnect).
    const lastRefusal = Math.max(killedAt, ...unavailable.map((a) => a.at + a.ms));
    expect(lastRefusal - killedAt).toBeLessThan(10_000);

    await drained(p);
    const stored = await p.withStore((store) =>
      store.query<{ page: string; n: number }>(
        acc.id,
        "SELECT page, count() AS n FROM {db}.events WHERE startsWith(page, '/ha/') GROUP BY page",
      ),
    );
    const counts = new Map(stored.map((r) => [r.page, Number(r.n)]));
    const missing = [...load.acknowledged.events.keys()].filter((page) => !counts.has(page));
    const doubled = [...counts].filter(([, n]) => n > 1);
    console.log(
      `leader ${victim.name} killed: ${load.accepted} requests acknowledged ` +
        `(${load.acknowledged.events.size} events), ${unavailable.length} 503s over ` +
        `${lastRefusal - killedAt} ms; missing ${missing.length}, doubled ${doubled.length}`,
    );
    expect(missing).toEqual([]);
    expect(doubled).toEqual([]);
    await eventually(async () => {
      const ready = await p.http().get('/health/ready');
      return ready.status === 200 && !/degraded/.test(ready.body.drivers.bus.detail);
    }, 60_000);
  });
});
