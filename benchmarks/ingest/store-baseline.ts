import type { EventInput } from '@cdp/domain';
import { storedEventRow } from '../lib/event-rows.js';
import type { EventRow } from '@cdp/store';
import { insertVariants, openBaselineStore } from '../lib/store-inserts.js';
import { eventBatch, rng } from '../lib/generator.js';
import { args } from '../lib/stats.js';

/**
 * The store's own speed, the ceiling of `bench:ingest`: the same kind of event rows inserted straight
 * into one chDB events table (the platform's declaration), in each input format chDB takes and at
 * several insert sizes, encoding included (rows -> bytes -> insert; the formats: benchmarks/lib/store-inserts.ts).
 * A child process of the ingest benchmark (chDB holds one data directory per process); prints one JSON
 * line of rows/s per variant.
 *
 * `--engine Null` (or `Memory`) inserts into a table of the same columns on that engine instead: Null
 * keeps nothing, so its CPU is the engine's parsing and the insert's own fixed cost, and the difference
 * from MergeTree is writing the parts (docs/benchmarks.md "The floor of this design").
 */
const opt = args({
  events: 300_000,
  seed: 7,
  population: 20_000,
  sizes: '10000,50000',
  formats: 'all',
  engine: 'MergeTree',
});
const ENGINES = ['MergeTree', 'Null', 'Memory'];
if (!ENGINES.includes(String(opt.engine))) throw new Error(`--engine is one of ${ENGINES.join(', ')}`);
const sizes = String(opt.sizes).split(',').map(Number);

/** The event rows the platform stores for the generator's events (one customer per visitor). */
function eventRows(n: number): EventRow[] {
  const random = rng(Number(opt.seed));
  const received = Date.now();
  const inputs = eventBatch(random, n, Number(opt.population)) as unknown as EventInput[];
  return inputs.map((input, i) => storedEventRow(input, received, `raw-${Math.floor(i / 1000)}`, i % 1000));
}

const rows = eventRows(Number(opt.events));
const store = await openBaselineStore('rawbaseline');
const { session, dir } = store;
let table = store.table;
if (opt.engine !== 'MergeTree') {
  await session.queryAsync(`CREATE TABLE ${table}_${opt.engine} AS ${table} ENGINE = ${opt.engine}`);
  table = `${table}_${opt.engine}`;
}

const variants = insertVariants(session, table, dir);

const chosen = opt.formats === 'all' ? Object.keys(variants) : String(opt.formats).split(',');
for (const format of chosen)
  for (const size of sizes) {
    // A Null table has nothing to empty (and refuses TRUNCATE).
    if (opt.engine !== 'Null') await session.queryAsync(`TRUNCATE TABLE ${table}`);
    const started = performance.now();
    const cpu = process.cpuUsage();
    let error: string | undefined;
    try {
      for (let i = 0; i < rows.length; i += size) await variants[format]!(rows.slice(i, i + size));
    } catch (err) {
      error = String(err).slice(0, 300);
    }
    const seconds = (performance.now() - started) / 1000;
    // every thread of this process: the encoding here and chDB's parsing, writing and merging
    const { user, system } = process.cpuUsage(cpu);
    const stored = Number((await session.queryAsync(`SELECT count() FROM ${table}`)).text().trim());
    // A Null table keeps nothing: its rows are those it took without an error.
    const taken = opt.engine === 'Null' ? (error ? 0 : rows.length) : stored;
    process.stdout.write(
      `${JSON.stringify({ format, engine: opt.engine, size, rows: rows.length, stored, seconds, rowsPerSecond: taken / seconds, cpuMicrosPerRow: (user + system) / taken, error })}\n`,
    );
  }
store.close();
