import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { args, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * The scale of the hot identity state (issue 19), each figure measured in a child process of its own
 * (identity-memory.child.ts: a fresh heap each, one chDB directory a process):
 *
 * - memory: bytes a customer (email + vuid, one profile with its email) of the embedded index, alone
 *   and with the hot profiles, after `--customers` customers were resolved in batches of 10 messages
 *   of 1000 records as the processor does: heap + external (typed arrays, arenas) after a full GC,
 *   and RSS growth. `--drivers compact,maps`: the index now, and the graph of maps it replaced (with
 *   the map of snapshot objects the hot profiles were) as the same-run baseline.
 * - speed: records/s resolved by both graphs in one process, alternated (creating customers; known
 *   customers, what most events are), medians and their ratio.
 * - redis: Redis `used_memory` a customer (index, profiles), on a private redis-server.
 * - rebuild: the time to rebuild the index and hot profiles of `--rebuild` customers from a chDB store
 *   by the store's own rebuild reads (and into Redis with `--redis yes`).
 *
 *   npm run build && node --expose-gc dist/benchmarks/ingest/identity-memory.js --customers 1000000,5000000
 */
const opt = args({
  customers: '1000000',
  drivers: 'compact,maps',
  profiles: 'both',
  speed: 1_000_000,
  rounds: 7,
  redis: 'yes',
  rebuild: 0,
  'redis-port': 6390,
});
const sizes = String(opt.customers).split(',').filter(Boolean).map(Number);
const drivers = String(opt.drivers).split(',').filter(Boolean);
const withProfiles = opt.profiles === 'both' ? [false, true] : [opt.profiles === 'yes'];
const child = fileURLToPath(new URL('./identity-memory.child.js', import.meta.url));
const load = () => loadavg()[0]!.toFixed(1);

function run(...argv: (string | number)[]): Record<string, unknown> {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--max-old-space-size=16000', child, ...argv.map(String)],
    { encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return { ...(JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>), load: load() };
}

const f = (n: unknown, digits = 0) => Number(Number(n).toFixed(digits));
const results: Record<string, unknown[]> = { memory: [], speed: [], redis: [], rebuild: [] };

const memoryRows: Row[] = [];
for (const customers of sizes)
  for (const driver of drivers)
    for (const profiles of withProfiles) {
      const r = run('memory', driver, customers, profiles ? 'yes' : 'no');
      results.memory!.push(r);
      memoryRows.push({
        customers,
        driver: driver === 'maps' ? 'maps (before)' : 'compact (now)',
        'hot profiles': profiles ? 'yes' : 'no',
        'heap B/customer': f(r.heapPerCustomer),
        'external B/customer': f(r.externalPerCustomer),
        'heap+external B/customer': f(r.bytesPerCustomer),
        'RSS growth B/customer': f(r.rssPerCustomer),
        's to resolve': f(r.seconds, 1),
        'load avg': String(r.load),
      });
    }
if (memoryRows.length) printTable('embedded identity index and hot profiles: bytes a customer', memoryRows);

const speed = Number(opt.speed);
if (speed > 0) {
  const r = run('speed', speed, Number(opt.rounds));
  results.speed!.push(r);
  printTable(`resolve throughput, ${f(speed)} customers held, medians of ${opt.rounds} alternated rounds`, [
    {
      records: 'new customers',
      'maps (before) rec/s': f(r.createMaps),
      'compact (now) rec/s': f(r.createCompact),
      'now / before': f(r.createRatio, 2),
      'load avg': String(r.load),
    },
    {
      records: 'known customers',
      'maps (before) rec/s': f(r.knownMaps),
      'compact (now) rec/s': f(r.knownCompact),
      'now / before': f(r.knownRatio, 2),
      'load avg': String(r.load),
    },
  ]);
}

if (opt.redis === 'yes') {
  const rows: Row[] = [];
  for (const customers of sizes) {
    const r = run('redis', customers, Number(opt['redis-port']));
    results.redis!.push(r);
    rows.push({
      customers,
      'index B/customer': f(r.indexPerCustomer),
      'profiles B/customer': f(r.profilesPerCustomer),
      'total B/customer': f(r.totalPerCustomer),
      'resolve rec/s': f(r.resolveRate),
      'load avg': String(r.load),
    });
  }
  printTable('Redis used_memory a customer (private redis-server, no persistence)', rows);
}

const rebuild = Number(opt.rebuild);
if (rebuild > 0) {
  const r = run('rebuild', rebuild, opt.redis === 'yes' ? Number(opt['redis-port']) : 0);
  results.rebuild!.push(r);
  printTable('rebuild from the store (chDB), index + hot profiles', [
    {
      customers: f(r.customers),
      'store rows written in s': f(r.writeSeconds, 1),
      'profiles s': f(r.profilesSeconds, 1),
      'index s': f(r.indexSeconds, 1),
      'memory total s': f(r.seconds, 1),
      'heap+external B/customer': f(r.bytesPerCustomer),
      'redis total s': r.redisSeconds === undefined ? '—' : f(r.redisSeconds, 1),
      'load avg': String(r.load),
    },
  ]);
}
process.stdout.write(`results: ${writeResults('identity-memory', { options: opt, results })}\n`);
