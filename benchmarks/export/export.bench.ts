import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { LocalDirBuckets } from '@cdp/buckets';
import { BuiltInExportCatalogs, ExportRunner, type ExportFormat, type ExportJob } from '@cdp/exports';
import { ChdbTransport, ClickHouseStore } from '@cdp/store';
import { args, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:export`: a whole-object export of `events` through the real data path (chDB pages →
 * DuckDB → CSV / Parquet in a local bucket, with sizes and hashes), beside a raw DuckDB `COPY` of the
 * same rows from one Parquet file to the same format, in the same run. Peak memory is the process's
 * resident set, sampled while each run works, over what it was before the run; it should stay flat
 * as the table grows: `-- --rows 1000000,10000000` shows it at two sizes.
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
const now = () => performance.now();

/** Peak resident set size while `work` runs, sampled every 20 ms, above the level before it. */
async function measured<T>(work: () => Promise<T>): Promise<{ result: T; seconds: number; peakMb: number }> {
  global.gc?.();
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  const started = now();
  const result = await work();
  const seconds = (now() - started) / 1000;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage.rss());
  return { result, seconds, peakMb: (peak - base) / 1024 / 1024 };
}

/** Seeded rows straight into the store's events table: the engine generates them, the same every run. */
function seedSql(rows: number): string {
  const h = (salt: number) => `cityHash64(number, ${seed}, ${salt})`;
  return `INSERT INTO {db}.events (event_id, msg_id, svc_id, ts, received_at, type, action, channel, identifiers,
      product_id, category, page, title, referrer, days_since_last_visit, landing)
    SELECT
      concat('e', toString(number)),
      concat('m', toString(intDiv(number, 1000))),
      concat('c', toString(${h(1)} % ${Number(opt.population)})),
      fromUnixTimestamp64Milli(toInt64(1700000000000 + ${h(2)} % 2592000000), 'UTC'),
      fromUnixTimestamp64Milli(toInt64(1702600000000 + number), 'UTC'),
      ['pageview', 'product', 'order', 'account'][${h(3)} % 4 + 1],
      ['', 'detail', 'add_to_cart', 'purchase'][${h(4)} % 4 + 1],
      'web',
      map('email', concat('c', toString(${h(1)} % ${Number(opt.population)}), '@example.com')),
      if(${h(5)} % 3 = 0, NULL, concat('p', toString(${h(6)} % 5000))),
      if(${h(7)} % 2 = 0, NULL, 'Electronics > Computers > Laptops'),
      concat('/products/', toString(${h(6)} % 5000)),
      if(${h(8)} % 4 = 0, NULL, concat('Title, "quoted" ', toString(${h(9)} % 100000))),
      if(${h(10)} % 5 = 0, NULL, concat('https://ref.example.com/', toString(${h(11)} % 1000))),
      if(${h(12)} % 6 = 0, NULL, toInt64(${h(13)} % 365)),
      if(${h(14)} % 7 = 0, NULL, ${h(15)} % 2 = 0)
    FROM numbers(${rows})
    SETTINGS max_insert_threads = 1`;
}

const results: Row[] = [];
for (const size of sizes) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-export-'));
  const store = new ClickHouseStore(new ChdbTransport(join(dir, 'chdb')));
  const account = 'bench';
  process.stdout.write(`\nseeding ${size.toLocaleString('en-US')} events…\n`);
  await store.ensureAccount(account);
  await store.query(account, seedSql(size));

  // The baselines read the same rows from one Parquet file the store wrote (not timed).
  const source = join(dir, 'source.parquet');
  await store.writeParquet(
    account,
    'SELECT * EXCEPT (msg_id, identifiers), toJSONString(identifiers) AS identifiers FROM {db}.events',
    {},
    source,
  );
  const buckets = new LocalDirBuckets({
    incoming: join(dir, 'in'),
    scratch: join(dir, 'scratch'),
    export: join(dir, 'export'),
  });
  const runner = new ExportRunner(store, buckets, new BuiltInExportCatalogs(), {
    tmpDir: join(dir, 'tmp'),
    rowsPerFile: Number(opt.rowsPerFile),
    memoryLimitMb: Number(opt.memoryMb),
    threads: Number(opt.threads),
  });

  for (const format of ['CSV', 'Parquet'] as ExportFormat[]) {
    const out = join(dir, `raw.${format === 'CSV' ? 'csv' : 'parquet'}`);
    const raw = await measured(async () => {
      const instance = await DuckDBInstance.create(':memory:', {
        memory_limit: `${Number(opt.memoryMb)}MB`,
        threads: String(opt.threads),
        temp_directory: join(dir, 'raw-tmp'),
      });
      const db = await instance.connect();
      await db.run(
        `COPY (SELECT * FROM read_parquet('${source}')) TO '${out}' (${format === 'CSV' ? 'FORMAT csv, HEADER true' : 'FORMAT parquet, COMPRESSION zstd'})`,
      );
      db.closeSync();
      instance.closeSync();
    });
    const rawBytes = statSync(out).size;
    rmSync(out);

    const job: ExportJob = {
      account,
      trackerId: 'bench',
      attempts: 1,
      record: {
        id: `bench-${format}-${size}`,
        path: '',
        state: 'running',
        requested_at: new Date().toISOString(),
        definition_id: 'bench',
        detail: { format, delimiter: 'comma', objects: ['events'] },
      },
    };
    const ours = await measured(() => runner.run(job, new AbortController().signal));
    const manifest = ours.result;
    const exported = manifest.files.reduce((n, f) => n + f.rows, 0);
    if (exported !== size) throw new Error(`exported ${exported} rows of ${size}`);
    const bytes = manifest.files.reduce((n, f) => n + f.bytes, 0);
    rmSync(join(dir, 'export'), { recursive: true, force: true });

    const row: Row = {
      rows: size,
      format,
      'export rows/s': size / ours.seconds,
      'export s': ours.seconds,
      'export peak MB': ours.peakMb,
      files: manifest.files.length,
      'export MB': bytes / 1024 / 1024,
      'raw COPY rows/s': size / raw.seconds,
      'raw peak MB': raw.peakMb,
      'raw MB': rawBytes / 1024 / 1024,
      'export / raw': raw.seconds / ours.seconds,
    };
    results.push(row);
    printTable(`${format}, ${size.toLocaleString('en-US')} rows`, [row]);
  }
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

printTable('exports of events: the data path beside a raw DuckDB COPY of the same rows', results);
const file = writeResults('export', {
  options: opt,
  machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
  results,
});
process.stdout.write(`\nresults: ${file}\n`);
