import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisConsentState, RedisIdentifierState } from '@cdp/consent/redis';
import { RedisIdentityIndex, RedisProfileState } from '@cdp/identity/redis';
import { ClickHouseStore, databaseName } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { startRedis, usedMemory } from '../lib/private-redis.js';
import { insertIdentityLinks, seededIds, T0 } from './identity-seed.js';
import { args, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * The identity rebuild of one big account into Redis (issue 29): time, the rebuilding process's peak
 * RSS, and Redis bytes a customer afterwards.
 *
 * Each size runs in two child processes: `seed` writes `--customers` customers into a fresh chDB store
 * by SQL (an email and a vuid link each, one profile with email and two more fields, and every 10th
 * customer merged into the one before, so the merges are replayed too); `rebuild` then does what
 * IdentityRebuild.run does, on a private redis-server: memberships, identifier state, profiles, opt-out
 * pool, then the index, all read back by the store's own rebuild reads. Its peak RSS (getrusage
 * maxrss) is the whole process's: Node, the chDB engine reading the store, and the driver's buffers.
 *
 * `--slice-rows N` sets the store's rebuildSliceRows (0: its default).
 *
 *   npm run build && node dist/benchmarks/ingest/redis-rebuild.js --customers 1000000
 */

async function seed(dir: string, customers: number) {
  const transport = new ChdbTransport(dir);
  const store = new ClickHouseStore(transport);
  try {
    await store.ensureAccount('acct');
    const db = databaseName('acct');
    const started = performance.now();
    const { msg, svc, svcOf } = seededIds();
    await insertIdentityLinks(transport, db, customers);
    await transport.exec(
      `INSERT INTO ${db}.identity_merges (loser, survivor, seq, cause, msg_id, created_at)
       SELECT ${svc}, ${svcOf('(number - 1)')}, intDiv(number, 10), [], ${msg}, toDateTime(${T0 / 1000})
       FROM numbers(${customers}) WHERE number % 10 = 9`,
    );
    await transport.exec(
      `INSERT INTO ${db}.customers (svc_id, version, msg_id, updated_at, email, first_name, city)
       SELECT ${svc}, 1, ${msg}, toDateTime(${T0 / 1000}), concat('customer', toString(number), '@example.com'),
              concat('Name', toString(number % 5000)), 'Oslo'
       FROM numbers(${customers}) WHERE number % 10 != 9`,
    );
    return { seedSeconds: (performance.now() - started) / 1000 };
  } finally {
    await transport.close();
  }
}

async function rebuild(dir: string, port: number, customers: number, sliceRows: number) {
  const transport = new ChdbTransport(dir);
  const store = new ClickHouseStore(transport, sliceRows > 0 ? { rebuildSliceRows: sliceRows } : {});
  const { client, stop } = await startRedis(port);
  try {
    const base = await usedMemory(client);
    const rssBefore = process.memoryUsage().rss;
    const index = new RedisIdentityIndex(client);
    const profiles = new RedisProfileState(client);
    const started = performance.now();
    if (!(await index.beginRebuild('acct'))) throw new Error('locked');
    try {
      await new RedisConsentState(client).load('acct', store.consentStates('acct'));
      await new RedisIdentifierState(client).load('acct', store.identifierUpdates('acct'));
      await profiles.load('acct', store.currentProfiles('acct'));
      await profiles.loadOptOutPool('acct', store.optOutPool('acct'));
      const profilesSeconds = (performance.now() - started) / 1000;
      const peakAfterProfiles = process.resourceUsage().maxRSS / 1024;
      const links = await index.load('acct', store.identityGraph('acct'));
      const seconds = (performance.now() - started) / 1000;
      const merged = await client.commands.get(`cdp:{acct}:mseq`);
      return {
        customers,
        links,
        merges: Number(merged),
        seconds,
        profilesSeconds,
        indexSeconds: seconds - profilesSeconds,
        rssBeforeMb: rssBefore / 2 ** 20,
        peakRssAfterProfilesMb: peakAfterProfiles,
        peakRssMb: process.resourceUsage().maxRSS / 1024,
        redisBytesPerCustomer: ((await usedMemory(client)) - base) / customers,
      };
    } finally {
      await index.endRebuild('acct');
    }
  } finally {
    await stop();
    await transport.close();
  }
}

function child(...argv: (string | number)[]): Record<string, unknown> {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), ...argv.map(String)], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === 'seed') {
  process.stdout.write(`${JSON.stringify(await seed(rest[0]!, Number(rest[1])))}\n`);
} else if (mode === 'rebuild') {
  process.stdout.write(
    `${JSON.stringify(await rebuild(rest[0]!, Number(rest[1]), Number(rest[2]), Number(rest[3] ?? 0)))}\n`,
  );
} else {
  const opt = args({ customers: '1000000', 'redis-port': 6391, 'slice-rows': 0 });
  const rows: Row[] = [];
  const results: unknown[] = [];
  for (const customers of String(opt.customers).split(',').map(Number)) {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-redis-rebuild-'));
    try {
      const seeded = child('seed', dir, customers);
      const r = {
        ...seeded,
        ...child('rebuild', dir, opt['redis-port']!, customers, opt['slice-rows']!),
        load: loadavg()[0],
      };
      results.push(r);
      const f = (k: string, d = 0) => Number(Number((r as Record<string, unknown>)[k]).toFixed(d));
      rows.push({
        customers,
        links: f('links'),
        merges: f('merges'),
        'rebuild s': f('seconds', 1),
        'profiles etc. s': f('profilesSeconds', 1),
        'index s': f('indexSeconds', 1),
        'RSS before MB': f('rssBeforeMb'),
        'peak RSS MB (profiles etc.)': f('peakRssAfterProfilesMb'),
        'peak RSS MB': f('peakRssMb'),
        'Redis B/customer': f('redisBytesPerCustomer'),
        load: f('load', 1),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  printTable('Identity rebuild into Redis (one account)', rows);
  writeResults('redis-rebuild', { results });
}
