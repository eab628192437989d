import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync } from 'node:fs';
import { freePort } from '../lib/free-port.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allFaultPoints } from '@cdp/faults';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClickHouseStore } from '@cdp/store';

/**
 * The repeated-SIGKILL soak (issue "A 202 is a promise"): the all-in-one server takes batches of
 * events, each event a new customer (a new email), from concurrent clients, and is SIGKILLed again
 * and again, at a random moment from outside or at a random write boundary (a fault point), then
 * started again on the same data. At the end, every acknowledged event must be stored exactly once
 * and every acknowledged customer must be live exactly once in the store and readable by the API.
 */
export interface SoakOptions {
  events: number;
  kills: number;
  batch: number;
  clients: number;
  /** Where the built apps are (dist/ of the repository). */
  root: string;
  seed: number;
  /** Customers read back through `GET /v3/profiles` at the end (all are checked in the store). */
  apiSample: number;
  log?: (line: string) => void;
}

export interface SoakResult {
  kills: { outside: number; faultPoint: number };
  events: { acknowledged: number; stored: number; lost: number; doubled: number };
  customers: {
    acknowledged: number;
    live: number;
    lost: number;
    doubled: number;
    apiChecked: number;
    apiMissing: number;
  };
  seconds: number;
}

const ADMIN = 'soak-admin-token';

/** A deterministic generator, so a failing run can be repeated. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

class Server {
  readonly exited: Promise<void>;
  constructor(
    readonly proc: ChildProcess,
    readonly url: string,
  ) {
    this.exited = new Promise((resolve) => proc.once('exit', () => resolve()));
  }
  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }
}

async function startServer(root: string, dataDir: string, logDir: string, faults?: string): Promise<Server> {
  const port = await freePort();
  const out = openSync(join(logDir, 'server.log'), 'a');
  const proc = spawn(process.execPath, [join(root, 'dist', 'apps', 'cdp', 'src', 'main.js')], {
    cwd: root,
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      CDP_DATA_DIR: dataDir,
      CDP_ADMIN_TOKEN: ADMIN,
      PORT: String(port),
      HOST: '127.0.0.1',
      ...(faults ? { CDP_TEST_FAULTS: faults } : { CDP_TEST_FAULTS: '' }),
    },
    stdio: ['ignore', out, out],
  });
  const server = new Server(proc, `http://127.0.0.1:${port}`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!server.alive) throw new Error(`the server exited at start (see ${logDir}/server.log)`);
    try {
      if ((await fetch(`${server.url}/health`)).status === 200) return server;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the server did not become ready');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function pending(server: Server): Promise<number> {
  try {
    const body = (await (await fetch(`${server.url}/health`)).json()) as {
      drivers: { bus: { detail?: string } };
    };
    return Number(/^(\d+)/.exec(body.drivers.bus.detail ?? '')?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const log = o.log ?? (() => undefined);
  const started = Date.now();
  const dataDir = mkdtempSync(join(tmpdir(), 'cdp-soak-'));
  const logDir = mkdtempSync(join(tmpdir(), 'cdp-soak-log-'));
  const random = rng(o.seed);
  // The write boundaries a batch of events with new customers crosses (bus ack included).
  const points = allFaultPoints().filter((p) =>
    [
      'store.insert.ingest_commits.begin',
      'store.insert.identity_links',
      'store.insert.customers',
      'store.insert.events',
      'store.insert.ingest_commits',
      'profiles.apply',
      'identity.settle',
      'bus.ack',
    ].includes(p),
  );

  let server = await startServer(o.root, dataDir, logDir);
  const res = await fetch(`${server.url}/admin/v1/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'soak' }),
  });
  const account = (await res.json()) as { account: { id: string }; public_key: string; private_key: string };
  await fetch(`${server.url}/admin/v1/accounts/${account.account.id}/rate-limits`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ profiles: 'unlimited' }),
  });

  const acknowledged: number[] = []; // batch numbers whose 202 came back
  const kills = { outside: 0, faultPoint: 0 };
  const perLife = Math.max(1, Math.ceil(o.events / o.batch / (o.kills + 1)));
  let nextBatch = 0;

  const body = (b: number) =>
    JSON.stringify(
      Array.from({ length: o.batch }, (_, i) => ({
        type: 'pageview',
        identifiers: { email: `s${b}-${i}@soak.example` },
        data: { page: `/${b}/${i}` },
      })),
    );

  for (let life = 0; ; life++) {
    const last = kills.outside + kills.faultPoint >= o.kills;
    if (last && acknowledged.length * o.batch >= o.events) break;
    // Half the lives end at a random write boundary, the others by a SIGKILL from outside.
    const byFault = life > 0 && !last && random() < 0.5;
    const faults = byFault
      ? `${points[Math.floor(random() * points.length)]}:kill@${1 + Math.floor(random() * 5)}`
      : undefined;
    if (life > 0) server = await startServer(o.root, dataDir, logDir, faults);
    const live = server;
    const batches = last ? Math.ceil(o.events / o.batch) - acknowledged.length : perLife;
    // An outside kill comes after a random number of this life's acknowledgements, mid-processing.
    const killAfter = last || byFault ? Infinity : 1 + Math.floor(random() * batches);
    let sent = 0;
    let acked = 0;
    let killedByUs = false;
    const client = async () => {
      while (live.alive && sent < batches) {
        const b = nextBatch++;
        sent++;
        try {
          const r = await fetch(`${live.url}/v3/events`, {
            method: 'POST',
            headers: { 'x-api-key': account.public_key, 'content-type': 'application/json' },
            body: body(b),
          });
          await r.arrayBuffer();
          if (r.status !== 202) continue; // refused (503 while the processor is behind): not promised
          acknowledged.push(b);
          if (++acked >= killAfter && live.alive) {
            killedByUs = true;
            live.proc.kill('SIGKILL');
          }
        } catch {
          return; // the server died mid-request: that batch was never acknowledged
        }
      }
    };
    await Promise.all(Array.from({ length: o.clients }, client));
    if (last) break;
    // A fault point fires while the acknowledged batches are processed: give it the time to.
    if (byFault && live.alive)
      await Promise.race([live.exited, new Promise((r) => setTimeout(r, 20_000).unref())]);
    if (live.alive) {
      killedByUs = true; // a fault that never fired, or a kill after the life's last batch
      live.proc.kill('SIGKILL');
    }
    await live.exited;
    kills[killedByUs ? 'outside' : 'faultPoint']++;
    log(
      `life ${life} (${faults ?? 'outside SIGKILL'}): ${acked} of ${sent} batches acknowledged; ${acknowledged.length} in all`,
    );
  }

  // Wait until everything acknowledged has been processed, then read the store.
  const deadline = Date.now() + 300_000;
  while ((await pending(server)) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const sample = acknowledged.slice(0, o.apiSample);
  let apiMissing = 0;
  for (const b of sample) {
    const email = `s${b}-${Math.floor(random() * o.batch)}@soak.example`;
    for (let tries = 0; ; tries++) {
      const r = await fetch(`${server.url}/v3/profiles?email=${encodeURIComponent(email)}`, {
        headers: { 'x-api-key': account.private_key },
      });
      const ok =
        r.status === 200 &&
        ((await r.json()) as { attributes: { email?: string } }).attributes.email === email;
      if (ok) break;
      if (tries > 100) {
        apiMissing++;
        break;
      }
      await new Promise((res) => setTimeout(res, 100));
    }
  }
  server.proc.kill('SIGTERM');
  await server.exited;

  const store = new ClickHouseStore(new ChdbTransport(join(dataDir, 'store', 'chdb')));
  try {
    const q = <T>(sql: string) => store.query<T>(account.account.id, sql);
    const pages = await q<{ b: string; n: string; c: string }>(
      `SELECT splitByChar('/', page)[2] AS b, count() AS n, uniqExact(page) AS c FROM {db}.events GROUP BY b`,
    );
    const perBatch = new Map(pages.map((r) => [Number(r.b), { rows: Number(r.n), distinct: Number(r.c) }]));
    const live = await q<{ b: string; n: string; c: string }>(
      `SELECT splitByChar('-', substring(email, 2))[1] AS b, count() AS n, uniqExact(email) AS c
       FROM {db}.customers FINAL WHERE merged_into IS NULL AND email LIKE 's%@soak.example' GROUP BY b`,
    );
    const livePerBatch = new Map(
      live.map((r) => [Number(r.b), { rows: Number(r.n), distinct: Number(r.c) }]),
    );
    const events = { acknowledged: acknowledged.length * o.batch, stored: 0, lost: 0, doubled: 0 };
    const customers = {
      acknowledged: acknowledged.length * o.batch,
      live: 0,
      lost: 0,
      doubled: 0,
      apiChecked: sample.length,
      apiMissing,
    };
    for (const b of acknowledged) {
      const e = perBatch.get(b) ?? { rows: 0, distinct: 0 };
      events.stored += e.distinct;
      events.lost += o.batch - e.distinct;
      events.doubled += e.rows - e.distinct;
      const c = livePerBatch.get(b) ?? { rows: 0, distinct: 0 };
      customers.live += c.distinct;
      customers.lost += o.batch - c.distinct;
      customers.doubled += c.rows - c.distinct;
    }
    return { kills, events, customers, seconds: Math.round((Date.now() - started) / 1000) };
  } finally {
    await store.close();
  }
}
