import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'chdb';
import type { EventInput } from '@cdp/domain';
import { storedEventRow } from '../lib/event-rows.js';
import { accountTables, databaseName, EVENTS, storeColumns, type EventRow } from '@cdp/store';
import { rowEncoder } from '../../libs/store/src/row-encoding.js';
import { eventBatch, rng } from '../lib/generator.js';
import { args } from '../lib/stats.js';

/**
 * The store's own speed, the ceiling of `bench:ingest`: the same kind of event rows inserted straight
 * into one chDB events table (the platform's declaration), in each input format chDB takes and at
 * several insert sizes, encoding included (rows -> bytes -> insert). A child process of the ingest
 * benchmark (chDB holds one data directory per process); prints one JSON line of rows/s per variant.
 *
 * Formats: JSONCompactEachRow (the platform's encoder), TabSeparated, and RowBinary from a file
 * (`INSERT ... SELECT FROM file()`: chdb's raw inserts take text formats only). Arrow input is not
 * here: chdb 3.4 registers Arrow columns on its default connection only, which a Session (the
 * platform's, and this one) closes.
 */
const opt = args({ events: 300_000, seed: 7, population: 20_000, sizes: '10000,50000', formats: 'all' });
const sizes = String(opt.sizes).split(',').map(Number);
const columns = storeColumns(EVENTS).filter((c) => !c.addedLater);

/** The event rows the platform stores for the generator's events (one customer per visitor). */
function eventRows(n: number): EventRow[] {
  const random = rng(Number(opt.seed));
  const received = Date.now();
  const inputs = eventBatch(random, n, Number(opt.population)) as unknown as EventInput[];
  return inputs.map((input, i) => storedEventRow(input, received, `raw-${Math.floor(i / 1000)}`, i % 1000));
}

const rows = eventRows(Number(opt.events));
const dir = mkdtempSync(join(tmpdir(), 'cdp-store-baseline-'));
const session = new Session(join(dir, 'chdb'));
const db = databaseName('rawbaseline');
for (const statement of accountTables(db)) await session.queryAsync(statement);
const table = `${db}.${EVENTS.name}`;

/** A cell as a row of `data`'s columns or the row itself reads it. */
const cell = (row: EventRow, name: string): unknown =>
  name in row
    ? (row as unknown as Record<string, unknown>)[name]
    : ((row.data as Record<string, unknown>)[name] ?? null);
const millis = (t: string): number =>
  /^\d+\.\d{3}$/.test(t) ? Math.round(Number(t) * 1000) : Date.parse(`${t.replace(' ', 'T')}Z`);

const compact = rowEncoder(EVENTS);
const tsvEscape = (s: string) =>
  s.replace(/[\\\t\n']/g, (c) => (c === '\t' ? '\\t' : c === '\n' ? '\\n' : `\\${c}`));
function tsv(batch: readonly EventRow[]): string {
  return batch
    .map((row) =>
      columns
        .map(({ name, sql }) => {
          const v = cell(row, name);
          if (v === null || v === undefined) return '\\N';
          if (sql.startsWith('Map'))
            return `{${Object.entries(v as Record<string, string>)
              .map(([k, x]) => `'${tsvEscape(k)}':'${tsvEscape(x)}'`)
              .join(',')}}`;
          return tsvEscape(typeof v === 'string' ? v : JSON.stringify(v));
        })
        .join('\t'),
    )
    .join('\n');
}

/** RowBinary: strings length-prefixed, DateTime64(3) as Int64 ms, Nullable as a flag byte. */
function rowBinary(batch: readonly EventRow[]): Buffer {
  let buf = Buffer.allocUnsafe(1 << 20);
  let at = 0;
  const room = (n: number) => {
    if (at + n <= buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, at + n));
    buf.copy(bigger, 0, 0, at);
    buf = bigger;
  };
  const varint = (n: number) => {
    room(10);
    while (n >= 0x80) {
      buf[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    buf[at++] = n;
  };
  const str = (s: string) => {
    const len = Buffer.byteLength(s);
    varint(len);
    room(len);
    at += buf.write(s, at);
  };
  for (const row of batch)
    for (const { name, sql } of columns) {
      const v = cell(row, name);
      let type = sql;
      if (type.startsWith('Nullable(')) {
        room(1);
        const missing = v === null || v === undefined;
        buf[at++] = missing ? 1 : 0;
        if (missing) continue; // a null is its flag alone
        type = type.slice(9, -1);
      }
      if (type.startsWith('DateTime64')) {
        room(8);
        at = buf.writeBigInt64LE(BigInt(millis(v as string)), at);
      } else if (type.startsWith('Map')) {
        const entries = Object.entries(v as Record<string, string>);
        varint(entries.length);
        for (const [k, x] of entries) {
          str(k);
          str(x);
        }
      } else if (type === 'Int64') {
        room(8);
        at = buf.writeBigInt64LE(BigInt(v as number), at);
      } else if (type === 'Bool') {
        room(1);
        buf[at++] = v ? 1 : 0;
      } else str(String(v));
    }
  return buf.subarray(0, at);
}

let fileNo = 0;
const variants: Record<string, (batch: readonly EventRow[]) => Promise<void>> = {
  JSONCompactEachRow: async (batch) => {
    const { body, columns: names } = compact(batch);
    await session.insert({ table, values: Buffer.from(body), format: 'JSONCompactEachRow', columns: names });
  },
  TabSeparated: async (batch) => {
    await session.insert({ table, values: Buffer.from(tsv(batch)), format: 'TabSeparated' });
  },
  'RowBinary (file)': async (batch) => {
    const file = join(dir, `rows-${fileNo++}.bin`);
    writeFileSync(file, rowBinary(batch));
    const structure = columns
      .map((c) => `\`${c.name}\` ${c.sql}`)
      .join(', ')
      .replaceAll("'", "\\'");
    await session.queryAsync(
      `INSERT INTO ${table} SELECT * FROM file('${file}', 'RowBinary', '${structure}')`,
    );
    rmSync(file);
  },
};

const chosen = opt.formats === 'all' ? Object.keys(variants) : String(opt.formats).split(',');
for (const format of chosen)
  for (const size of sizes) {
    await session.queryAsync(`TRUNCATE TABLE ${table}`);
    const started = performance.now();
    let error: string | undefined;
    try {
      for (let i = 0; i < rows.length; i += size) await variants[format]!(rows.slice(i, i + size));
    } catch (err) {
      error = String(err).slice(0, 300);
    }
    const seconds = (performance.now() - started) / 1000;
    const stored = Number((await session.queryAsync(`SELECT count() FROM ${table}`)).text().trim());
    process.stdout.write(
      `${JSON.stringify({ format, size, rows: rows.length, stored, seconds, rowsPerSecond: stored / seconds, error })}\n`,
    );
  }
session.close();
rmSync(dir, { recursive: true, force: true });
