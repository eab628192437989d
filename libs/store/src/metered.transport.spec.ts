import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metrics, parseExposition, sampleValue } from '@cdp/metrics';
import { ChdbTransport } from './chdb/chdb.transport.js';
import { countRows, MeteredTransport } from './metered.transport.js';

describe('MeteredTransport', () => {
  const metrics = new Metrics({ defaultMetrics: false });
  let t: MeteredTransport;

  beforeAll(async () => {
    t = new MeteredTransport(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-'))), metrics);
    await t.exec('CREATE DATABASE IF NOT EXISTS acc_1');
    await t.exec('CREATE TABLE acc_1.events (id String) ENGINE = MergeTree ORDER BY id');
  });
  afterAll(() => t.close());

  it('counts inserted rows and times each insert by table, without the account database', async () => {
    await t.insert({ table: 'acc_1.events', rows: '{"id":"a"}\n{"id":"b\\nc"}\n{"id":"d"}' });
    await t.insert({ table: 'acc_1.events', rows: '["e"]\n', columns: ['id'] });
    const failed = await t.insert({ table: 'acc_1.events', rows: '{"id": [1, 2}' }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(Error);

    const samples = parseExposition(await metrics.exposition());
    expect(sampleValue(samples, 'cdp_store_insert_rows_total', { table: 'events' })).toBe(4);
    expect(
      sampleValue(samples, 'cdp_store_insert_duration_seconds_count', { table: 'events', outcome: 'ok' }),
    ).toBe(2);
    expect(
      sampleValue(samples, 'cdp_store_insert_duration_seconds_count', { table: 'events', outcome: 'error' }),
    ).toBe(1);
    const [stored] = await t.query<{ n: string | number }>('SELECT count() AS n FROM acc_1.events');
    expect(Number(stored?.n)).toBe(4);
  });

  it('counts one row a line', () => {
    expect(countRows('')).toBe(0);
    expect(countRows('{}')).toBe(1);
    expect(countRows('{}\n{}')).toBe(2);
    expect(countRows('{}\n{}\n')).toBe(2);
  });
});
