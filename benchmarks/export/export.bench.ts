import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClickHouseStore } from '@cdp/store';
import { args, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:export`: a whole-object export of `events` through the real data path (chDB pages →
 * DuckDB → CSV / Parquet in a local bucket, with sizes and hashes), beside a raw DuckDB `COPY` of the
 * same rows from one Parquet file to the same format, in the same run. Each run is a process of its
 * own, so its peak resident memory is its own; it should stay flat as the table grows:
 * `-- --rows 1000000,10000000` shows it at two sizes.
 */
const opt = args({
  rows: '1000000',
  seed: 42,
  population: 100_000,
  rowsPerFile: 1_000_000,
  threads: 2,
  memoryMb: 512,
});
const sizes = String(opt.rows)
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
const seed = Number(opt.seed);

/** Seeded rows straight into the store's events table: the engine generates them, the same every run. */
function seedSql(rows: number): string {
  const h = (salt: number) => `cityHash64(number, ${seed}, ${salt})`;
  const customer = `concat('c', toString(${h(1)} % ${Number(opt.population)}))`;
  return `INSERT INTO {db}.events (event_id, msg_id, svc_id, ts, received_at, type, action, channel, identifiers,
      product_id, category, page, title, referrer, days_since_last_visit, landing)
    SELECT
      concat('e', toString(number)),
      concat('m', toString(intDiv(number, 1000))),
      ${customer},
      fromUnixTimestamp64Milli(toInt64(1700000000000 + ${h(2)} % 2592000000), 'UTC'),
      fromUnixTimestamp64Milli(toInt64(1702600000000 + number), 'UTC'),
      ['pageview', 'product', 'order', 'account'][${h(3)} % 4 + 1],
      ['', 'detail', 'add_to_cart', 'purchase'][${h(4)} % 4 + 1],
      'web',
      map('email', concat(${customer}, '@example.com')),
      if(${h(5)} % 3 = 0, NULL, concat('p', toString(${h(6)} % 5000))),
      if(${h(7)} % 2 = 0, NULL, 'Electronics > Computers > Laptops'),
      concat('/products/', toString(${h(6)} % 5000)),
      if(${h(8)} % 4 = 0, NULL, concat('Title, "quoted" ', toString(${h(9)} % 100000))),
      if(${h(10)} % 5 = 0, NULL, concat('https://ref.example.com/', toString(${h(11)} % 1000))),
      if(${h(12)} % 6 = 0, NULL, toInt64(${h(13)} % 365)),
      if(${h(14)} % 7 = 0, NULL, ${h(15)} % 2 = 0)
    FROM numbers(${rows})`;
}

interface Run {
  seconds: number;
  rows: number;
  bytes: number;
  files: number;
  idleRssMb: number;
  peakRssMb: number;
}

function run(dir: string, mode: 'export' | 'raw', format: string): Run {
  const out = execFileSync(
    process.execPath,
    [
      new URL('./export-run.js', import.meta.url).pathname,
      ...['--dir', dir, '--mode', mode, '--format', format],
      ...['--rowsPerFile', String(opt.rowsPerFile), '--threads', String(opt.threads)],
      ...['--memoryMb', String(opt.memoryMb)],
    ],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as Run;
}

const results: Row[] = [];
for (const size of sizes) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-export-'));
  process.stdout.write(`\nseeding ${size.toLocaleString('en-US')} events…\n`);
  const store = new ClickHouseStore(new ChdbTransport(join(dir, 'chdb')));
  await store.ensureAccount('bench');
  await store.query('bench', seedSql(size));
  // A table at rest: the seeding insert leaves ~10 parts that the engine would otherwise merge in the
  // background during the measured export, adding its merge's memory (~500 MB at 10M rows, in this
  // process with chDB) to a run it has nothing to do with. Not timed.
  await store.query('bench', 'OPTIMIZE TABLE {db}.events FINAL');
  // The raw baseline reads the same rows, as the export writes them, from one Parquet file (not timed).
  await store.writeParquet(
    'bench',
    'SELECT * EXCEPT (msg_id, identifiers), toJSONString(identifiers) AS identifiers FROM {db}.events',
    {},
    join(dir, 'source.parquet'),
  );
  await store.close();

  for (const format of ['CSV', 'Parquet']) {
    const raw = run(dir, 'raw', format);
    const ours = run(dir, 'export', format);
    if (ours.rows !== size || raw.rows !== size)
      throw new Error(`exported ${ours.rows} / ${raw.rows} of ${size}`);
    const row: Row = {
      rows: size,
      format,
      'export rows/s': size / ours.seconds,
      'export s': ours.seconds,
      'export peak RSS MB': ours.peakRssMb,
      'export RSS at start MB': ours.idleRssMb,
      files: ours.files,
      'export MB': ours.bytes / 1024 / 1024,
      'raw COPY rows/s': size / raw.seconds,
      'raw peak RSS MB': raw.peakRssMb,
      'raw MB': raw.bytes / 1024 / 1024,
      'export / raw': raw.seconds / ours.seconds,
    };
    results.push(row);
    printTable(`${format}, ${size.toLocaleString('en-US')} rows`, [row]);
  }
  rmSync(dir, { recursive: true, force: true });
}

printTable('exports of events: the data path beside a raw DuckDB COPY of the same rows', results);
const file = writeResults('export', {
  options: opt,
  machine: { cpus: cpus().length, node: process.version },
  results,
});
process.stdout.write(`\nresults: ${file}\n`);
