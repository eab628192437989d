import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { StoreError, type ClickHouseTransport } from './clickhouse-transport.js';

/**
 * The transport contract: create tables, insert rows, stream a select, map server errors. Its SQL
 * also runs on old ClickHouse servers (18.16); `modern` adds what only current engines support.
 */
export function clickHouseTransportContract(
  name: string,
  open: () => Promise<ClickHouseTransport>,
  features: { modern: boolean },
): void {
  describe(`ClickHouseTransport contract: ${name}`, () => {
    let t: ClickHouseTransport;
    const db = `contract_${Date.now()}`;

    beforeAll(async () => {
      t = await open();
      await t.exec(`CREATE DATABASE IF NOT EXISTS ${db}`);
      await t.exec(
        `CREATE TABLE IF NOT EXISTS ${db}.rows (id String, n Int64, note Nullable(String)) ENGINE = MergeTree ORDER BY id`,
      );
    });
    afterAll(async () => {
      await t.exec(`DROP DATABASE IF EXISTS ${db}`);
      await t.close();
    });

    it('answers a ping', async () => {
      await expect(t.ping()).resolves.toBeUndefined();
    });

    it('inserts JSONEachRow and reads the rows back, nulls and unicode intact', async () => {
      const rows = [
        { id: 'a', n: 1, note: 'ünïcødé "quoted"\nnewline' },
        { id: 'b', n: -2, note: null },
      ];
      await t.insert({ table: `${db}.rows`, rows: rows.map((r) => JSON.stringify(r)).join('\n') });
      const back = await t.query<{ id: string; n: string | number; note: string | null }>(
        `SELECT id, n, note FROM ${db}.rows ORDER BY id`,
      );
      expect(back.map((r) => ({ ...r, n: Number(r.n) }))).toEqual(rows);
    });

    it('streams a large select row by row', async () => {
      const lines = Array.from({ length: 20_000 }, (_, i) =>
        JSON.stringify({ id: `s${String(i).padStart(6, '0')}`, n: i }),
      );
      await t.insert({ table: `${db}.rows`, rows: lines.join('\n') });
      let count = 0;
      let sum = 0;
      for await (const row of t.stream<{ n: string | number }>(
        `SELECT n FROM ${db}.rows WHERE id LIKE 's%'`,
      )) {
        count++;
        sum += Number(row.n);
      }
      expect(count).toBe(20_000);
      expect(sum).toBe((19_999 * 20_000) / 2);
    });

    it('maps an engine error to a StoreError with the engine code', async () => {
      const err = await t.query(`SELECT * FROM ${db}.missing_table`).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).code).toBe(60); // UNKNOWN_TABLE
      const syntax = await t.exec('SELEC 1').catch((e: unknown) => e);
      expect((syntax as StoreError).code).toBe(62); // SYNTAX_ERROR
    });

    if (features.modern) {
      it('marks rows the engine cannot parse as a deterministic failure, and an outage as transient', async () => {
        // A lone surrogate (what a client once got past the API) and a number that is not one.
        for (const rows of ['{"id":"s","n":1,"note":"\\ud800"}\n', '{"id":"s","n":"abc","note":null}\n']) {
          const err = await t.insert({ table: `${db}.rows`, rows }).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(StoreError);
          expect((err as StoreError).deterministic).toBe(true);
        }
        const missing = await t.query(`SELECT * FROM ${db}.missing_table`).catch((e: unknown) => e);
        expect((missing as StoreError).deterministic).toBe(false);
        expect(new StoreError('connect ECONNREFUSED', undefined).deterministic).toBe(false);
      });

      it('binds parameters in the engine, never in the SQL text', async () => {
        const evil = "x' OR 1=1 --";
        const rows = await t.query<{ c: string | number }>(
          `SELECT count() AS c FROM ${db}.rows WHERE id IN {ids:Array(String)} OR id = {one:String}`,
          {
            ids: ['a', 'b'],
            one: evil,
          },
        );
        expect(Number(rows[0]!.c)).toBe(2);
      });

      it('inserts JSONCompactEachRow rows in the order of the columns named', async () => {
        await t.insert({
          table: `${db}.rows`,
          rows: '["c1", 7, null]\n["c2", -7, "x"]',
          columns: ['id', 'n', 'note'],
        });
        const back = await t.query<{ id: string; n: number; note: string | null }>(
          `SELECT id, n, note FROM ${db}.rows WHERE id IN ('c1', 'c2') ORDER BY id`,
        );
        expect(back.map((r) => ({ ...r, n: Number(r.n) }))).toEqual([
          { id: 'c1', n: 7, note: null },
          { id: 'c2', n: -7, note: 'x' },
        ]);
      });

      // Parquet output needs a server from 2019 on (19.x); exports stage their pages this way.
      it('writes a select with bound parameters as one Parquet file on local disk, nulls and types intact', async () => {
        const path = join(mkdtempSync(join(tmpdir(), 'cdp-parquet-')), "page 'one'.parquet");
        await t.writeParquet(
          `SELECT id, n, note FROM ${db}.rows WHERE id IN ({a:String}, {b:String}) ORDER BY id`,
          { a: 'a', b: 'b' },
          path,
        );
        const bytes = readFileSync(path);
        expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
        const duck = await (await DuckDBInstance.create(':memory:')).connect();
        const read = await duck.runAndReadAll(
          `SELECT id, n, note, typeof(n) AS t FROM read_parquet('${path.replaceAll("'", "''")}') ORDER BY id`,
        );
        expect(read.getRowObjectsJS()).toEqual([
          { id: 'a', n: 1n, note: 'ünïcødé "quoted"\nnewline', t: 'BIGINT' },
          { id: 'b', n: -2n, note: null, t: 'BIGINT' },
        ]);
        duck.closeSync();
        await expect(t.writeParquet(`SELECT 1`, {}, path)).rejects.toBeInstanceOf(StoreError);
      });

      it('drops a repeated insert carrying the same deduplication token', async () => {
        await t.exec(
          `CREATE TABLE ${db}.dedup (id String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100`,
        );
        for (let i = 0; i < 2; i++) {
          await t.insert({
            table: `${db}.dedup`,
            rows: '{"id":"x"}\n{"id":"y"}',
            settings: { insert_deduplication_token: 'batch-1' },
          });
        }
        const rows = await t.query<{ c: string | number }>(`SELECT count() AS c FROM ${db}.dedup`);
        expect(Number(rows[0]!.c)).toBe(2);
      });
    }
  });
}
