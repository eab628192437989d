import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'chdb';
import { accountTables, databaseName, EVENTS, storeColumns, type EventRow } from '@cdp/store';
import { rowEncoder } from '../../libs/store/src/row-encoding.js';

/**
 * Event rows inserted straight into a chDB events table (the platform's declaration), in each input
 * format chDB takes, encoding included (rows -> bytes -> insert): the store baselines of bench:ingest
 * and bench:load. Formats: JSONCompactEachRow (the platform's encoder), TabSeparated, and RowBinary
 * from a file (`INSERT ... SELECT FROM file()`: chdb's raw inserts take text formats only). Arrow input
 * is not here: chdb 3.4 registers Arrow columns on its default connection only, which a Session closes.
 */
const columns = storeColumns(EVENTS).filter((c) => !c.addedLater);

/** A cell as a row of `data`'s columns or the row itself reads it. */
const cell = (row: EventRow, name: string): unknown =>
  name in row
    ? (row as unknown as Record<string, unknown>)[name]
    : ((row.data as Record<string, unknown>)[name] ?? null);
const millis = (t: string): number =>
  /^\d+\.\d{3}$/.test(t) ? Math.round(Number(t) * 1000) : Date.parse(`${t.replace(' ', 'T')}Z`);

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

export type InsertVariant = (batch: readonly EventRow[]) => Promise<void>;

/** One insert function per format, into `table` of `session`; RowBinary's files are written in `dir`. */
export function insertVariants(session: Session, table: string, dir: string): Record<string, InsertVariant> {
  const compact = rowEncoder(EVENTS);
  let fileNo = 0;
  return {
    JSONCompactEachRow: async (batch) => {
      const { body, columns: names } = compact(batch);
      await session.insert({
        table,
        values: Buffer.from(body),
        format: 'JSONCompactEachRow',
        columns: names,
      });
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
}

/** A baseline's own store: a chDB session in a new directory with one account's tables, and its events table. */
export interface BaselineStore {
  session: Session;
  table: string;
  dir: string;
  /** Closes the session and removes the directory. */
  close(): void;
}

export async function openBaselineStore(name: string): Promise<BaselineStore> {
  const dir = mkdtempSync(join(tmpdir(), `cdp-${name}-`));
  const session = new Session(join(dir, 'chdb'));
  const db = databaseName(name.replace(/[^a-z0-9]/g, ''));
  for (const statement of accountTables(db)) await session.queryAsync(statement);
  return {
    session,
    table: `${db}.${EVENTS.name}`,
    dir,
    close() {
      session.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
