import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import type { EventRow } from '@cdp/store';
import { storedEventRow } from '../lib/event-rows.js';
import { insertVariants, openBaselineStore } from '../lib/store-inserts.js';
import { args } from '../lib/stats.js';

/**
 * The baselines of `bench:load`, in a process of their own (chDB holds one data directory per process,
 * and their memory must not be counted as the platform's): a raw csv-parse of the file, then the best
 * case of a direct store insert of its rows, as bench:ingest's store baseline does it (a fresh chDB
 * events table of the platform's declaration, `--size` rows an insert, in each of `--formats`). The
 * rows are built from the file a chunk at a time outside the clock; encoding and inserting are timed.
 * Prints one JSON line per measurement.
 */
const opt = args({ file: '', size: 50_000, formats: 'RowBinary (file),JSONCompactEachRow' });
const file = String(opt.file);
const size = Number(opt.size);
const records = () => createReadStream(file).pipe(parse({ from_line: 2 })) as AsyncIterable<string[]>;
let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);

{
  const started = performance.now();
  let n = 0;
  for await (const record of records()) if (record) n++;
  if (n === 0) throw new Error('nothing parsed');
  print({ baseline: 'csv-parse', rows: n, seconds: (performance.now() - started) / 1000 });
}

const store = await openBaselineStore('loadbaseline');
const { session, table, dir } = store;
const variants = insertVariants(session, table, dir);
const received = Date.now();

for (const format of String(opt.formats).split(',')) {
  const insert = variants[format];
  if (!insert) throw new Error(`unknown format ${format} (known: ${Object.keys(variants).join(', ')})`);
  await session.queryAsync(`TRUNCATE TABLE ${table}`);
  let seconds = 0;
  let rows = 0;
  let batch: EventRow[] = [];
  const flush = async () => {
    const started = performance.now();
    await insert(batch);
    seconds += (performance.now() - started) / 1000;
    rows += batch.length;
    batch = [];
  };
  for await (const [type, action, email, ts, page, title] of records()) {
    // Rows grouped by message as the loader's 1000-record messages would be.
    const n = rows + batch.length;
    const input = {
      type: type!,
      ...(action ? { action } : {}),
      identifiers: { email: email! },
      data: { ts, page, title },
    };
    batch.push(storedEventRow(input, received, `baseline-${Math.floor(n / 1000)}`, n % 1000));
    if (batch.length === size) await flush();
  }
  if (batch.length) await flush();
  const stored = Number((await session.queryAsync(`SELECT count() FROM ${table}`)).text().trim());
  print({ baseline: 'insert', format, size, rows, stored, seconds, rowsPerSecond: stored / seconds });
}
clearInterval(sampler);
print({ baseline: 'memory', peakRss });
store.close();
