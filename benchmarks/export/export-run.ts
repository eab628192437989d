import { statSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { LocalDirBuckets } from '@cdp/buckets/local';
import { BuiltInExportCatalogs, type ExportFormat, type ExportJob } from '@cdp/exports';
import { ExportRunner } from '@cdp/exports/worker';
import { createLogger } from '@cdp/logger';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClickHouseStore } from '@cdp/store';
import { args } from '../lib/stats.js';

/**
 * One measured run in a process of its own, so its peak resident memory (`maxRSS`) is its own:
 * `export` runs the export data path over the seeded store, `raw` a DuckDB COPY of the same rows.
 * Prints one JSON line.
 */
const opt = args({
  dir: '',
  mode: 'export',
  format: 'CSV',
  rowsPerFile: 1_000_000,
  threads: 2,
  memoryMb: 512,
});
const dir = String(opt.dir);
const format = String(opt.format) as ExportFormat;
const mb = (bytes: number) => bytes / 1024 / 1024;
let started = 0;
let rows = 0;
let bytes = 0;
let files = 0;
let idleRssMb = 0;

if (opt.mode === 'raw') {
  const out = join(dir, `raw.${format === 'CSV' ? 'csv' : 'parquet'}`);
  const instance = await DuckDBInstance.create(':memory:', {
    memory_limit: `${Number(opt.memoryMb)}MB`,
    threads: String(opt.threads),
    temp_directory: join(dir, 'raw-tmp'),
  });
  const db = await instance.connect();
  idleRssMb = mb(process.memoryUsage.rss());
  started = performance.now();
  const options = format === 'CSV' ? 'FORMAT csv, HEADER true' : 'FORMAT parquet, COMPRESSION zstd';
  const result = await db.runAndReadAll(
    `COPY (SELECT * FROM read_parquet('${join(dir, 'source.parquet')}')) TO '${out}' (${options})`,
  );
  rows = Number(result.getRowsJS()[0]![0]);
  bytes = statSync(out).size;
  files = 1;
  db.closeSync();
  instance.closeSync();
} else {
  const store = new ClickHouseStore(new ChdbTransport(join(dir, 'chdb')));
  await store.ensureAccount('bench');
  const buckets = new LocalDirBuckets({
    incoming: join(dir, 'in'),
    scratch: join(dir, 'scratch'),
    export: join(dir, 'export'),
  });
  const runner = new ExportRunner(
    store,
    buckets,
    new BuiltInExportCatalogs(),
    {
      tmpDir: join(dir, 'tmp'),
      rowsPerFile: Number(opt.rowsPerFile),
      memoryLimitMb: Number(opt.memoryMb),
      threads: Number(opt.threads),
    },
    createLogger('warn'),
  );
  const job: ExportJob = {
    account: 'bench',
    trackerId: 'bench',
    attempts: 1,
    record: {
      id: `bench-${format}`,
      path: `export/bench/data-exports/bench-${format}`,
      state: 'running',
      requested_at: new Date().toISOString(),
      definition_id: 'bench',
      detail: { format, delimiter: 'comma', objects: ['events'] },
    },
  };
  idleRssMb = mb(process.memoryUsage.rss());
  started = performance.now();
  const manifest = await runner.run(job, new AbortController().signal);
  rows = manifest.files.reduce((n, f) => n + f.rows, 0);
  bytes = manifest.files.reduce((n, f) => n + f.bytes, 0);
  files = manifest.files.length;
  await store.close();
}
const seconds = (performance.now() - started) / 1000;
process.stdout.write(
  `${JSON.stringify({ seconds, rows, bytes, files, idleRssMb, peakRssMb: process.resourceUsage().maxRSS / 1024 })}\n`,
);
