import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { customerIdSeed, identifierList } from '@cdp/domain';
import { bornKey, type ResolveInput } from '@cdp/identity';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * Redis's own cost of the identity path a record takes (issue 29): Redis `used_memory` a customer and the
 * Redis process's CPU a record (utime + stime from /proc/<pid>/stat over the load, divided by records),
 * for new customers and for known ones, resolved, profile-applied and settled as the processor does
 * (batches of 10 messages of 1000 records; customers with an email and a vuid, a profile holding the
 * email with its acceptance time).
 *
 * Each run has a private redis-server (no persistence) with the listpack settings of
 * infra/redis/redis.conf. `--before <dist root>` measures a build of another checkout too (e.g. main's
 * dist copied aside), alternated with this one round by round, so both are taken under the same load.
 *
 *   npm run build && node dist/benchmarks/ingest/redis-path-cpu.js --customers 1000000 --rounds 3 \
 *     --before /tmp/before/dist
 */
const opt = args({ customers: 1_000_000, known: 200_000, rounds: 3, before: '', port: 6391 });
const customers = Number(opt.customers);
const knownRecords = Number(opt.known);
const here = fileURLToPath(new URL('.', import.meta.url));
const currentRoot = resolve(here, '../..');

const BATCH = 10_000;
const PER_MESSAGE = 1_000;
const emailOf = (n: number) => `customer${n}@example.com`;
const messageId = (m: number) => `${m.toString(16).padStart(8, '0')}-7c1e-4b2a-9f3d-5e8a1c2b3d4e`;

/** The listpack settings of the shipped redis.conf, so the run measures what an operator gets. */
function confSettings(): string[] {
  const conf = readFileSync(resolve(currentRoot, '../infra/redis/redis.conf'), 'utf8');
  return conf
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([k]) => k && /^(hash|set|zset)-max-(listpack|intset)-/.test(k))
    .flatMap(([k, v]) => [`--${k}`, v!]);
}

/** Customer n's record in message `m` (the bus's m-th message) at `index`: accepted in that order. */
function record(n: number, m: number, message: string, index: number): ResolveInput {
  return {
    ids: identifierList({ email: emailOf(n), vuid: `vuid-${n}` }),
    seed: customerIdSeed(message, index),
    born: bornKey((1 + m) * 1000 + index),
    message,
    index,
  };
}

/** Clock ticks the process has run (user + system). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}
/** USER_HZ, 100 on Linux. */
const TICK_US = 10_000;

type Drivers = {
  connectRedis: (url: string, cluster?: boolean) => Promise<Connection>;
  RedisIdentityIndex: new (c: Connection) => Index;
  RedisProfileState: new (c: Connection) => Profiles;
  loadIdentityFunctions: (c: Connection) => Promise<void>;
};
type Connection = { close(): Promise<void>; onEveryPrimary(cmd: string[]): Promise<unknown[]> };
type Index = {
  beginRebuild(a: string): Promise<boolean>;
  load(a: string, rows: unknown): Promise<number>;
  resolve(a: string, r: ResolveInput[]): Promise<{ customerId: string }[]>;
  settle(a: string, m: string[]): Promise<void>;
};
type Profiles = { apply(a: string, u: unknown[]): Promise<unknown[]> };

async function drivers(root: string): Promise<Drivers> {
  const identity = (await import(resolve(root, 'libs/identity/src/redis/index.js'))) as Drivers;
  const redis = (await import(resolve(root, 'libs/redis/src/index.js'))) as Drivers;
  return { ...identity, connectRedis: redis.connectRedis };
}

function startServer(port: number): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no', ...confSettings()],
    {
      stdio: 'ignore',
    },
  );
}

async function* none(): AsyncIterable<never> {}

async function measure(root: string, port: number) {
  const d = await drivers(root);
  const server = startServer(port);
  let client: Connection | undefined;
  for (let tries = 0; !client; tries++) {
    try {
      client = await d.connectRedis(`redis://127.0.0.1:${port}`, false);
    } catch (err) {
      if (tries > 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    await d.loadIdentityFunctions(client);
    const used = async () => {
      const [info] = await client.onEveryPrimary(['INFO', 'memory']);
      return Number(/used_memory:(\d+)/.exec(String(info))![1]);
    };
    const index = new d.RedisIdentityIndex(client);
    const profiles = new d.RedisProfileState(client);
    await index.beginRebuild('acct');
    await index.load('acct', { links: none(), borns: none(), merges: none() });
    const base = await used();
    let at = 1;
    /** One batch as the processor takes it: resolve, apply the profiles, settle. */
    const batch = async (records: ResolveInput[], emails: string[]) => {
      const resolved = await index.resolve('acct', records);
      await profiles.apply(
        'acct',
        resolved.map((r, i) => ({ customerId: r.customerId, update: { email: emails[i] }, at: at++ })),
      );
      await index.settle('acct', [...new Set(records.map((r) => r.message))]);
    };
    let ticks = cpuTicks(server.pid!);
    for (let from = 0; from < customers; from += BATCH) {
      const records = Array.from({ length: Math.min(BATCH, customers - from) }, (_, i) => {
        const n = from + i;
        return record(
          n,
          Math.floor(n / PER_MESSAGE),
          messageId(Math.floor(n / PER_MESSAGE)),
          n % PER_MESSAGE,
        );
      });
      await batch(
        records,
        records.map((_, i) => emailOf(from + i)),
      );
    }
    const newUs = ((cpuTicks(server.pid!) - ticks) * TICK_US) / customers;
    const perCustomer = ((await used()) - base) / customers;
    let seed = 12345;
    ticks = cpuTicks(server.pid!);
    for (let done = 0; done < knownRecords; done += BATCH) {
      const ns: number[] = [];
      const records = Array.from({ length: Math.min(BATCH, knownRecords - done) }, (_, i) => {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        const n = seed % customers;
        ns.push(n);
        const m = done + i;
        // Accepted after every new customer's record: a known customer's age does not change.
        const message = Math.ceil(customers / PER_MESSAGE) + Math.floor(m / PER_MESSAGE);
        return record(n, message, `again-${Math.floor(m / PER_MESSAGE)}`, m % PER_MESSAGE);
      });
      await batch(
        records,
        ns.map((n) => emailOf(n)),
      );
    }
    const knownUs = ((cpuTicks(server.pid!) - ticks) * TICK_US) / knownRecords;
    return { perCustomer, newUs, knownUs };
  } finally {
    await client.close();
    server.kill();
    await new Promise((r) => server.once('exit', r));
  }
}

const builds: [string, string][] = [['now', currentRoot]];
if (opt.before) builds.unshift(['before', resolve(String(opt.before))]);
const runs: Record<string, { perCustomer: number; newUs: number; knownUs: number }[]> = {};
for (let round = 0; round < Number(opt.rounds); round++) {
  for (const [name, root] of round % 2 ? [...builds].reverse() : builds) {
    const r = await measure(root, Number(opt.port));
    (runs[name] ??= []).push(r);
    console.error(`round ${round + 1} ${name}: ${JSON.stringify(r)}`);
  }
}
const rows: Row[] = builds.map(([name]) => ({
  build: name,
  'Redis B/customer': Math.round(median(runs[name]!.map((r) => r.perCustomer))),
  'Redis CPU µs/new record': Number(median(runs[name]!.map((r) => r.newUs)).toFixed(1)),
  'Redis CPU µs/known record': Number(median(runs[name]!.map((r) => r.knownUs)).toFixed(1)),
}));
printTable(`Redis cost of the identity path, ${customers} customers, medians of ${opt.rounds}`, rows);
writeResults('redis-path-cpu', { customers, knownRecords, runs });
