import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clickHouseTransportContract } from '../clickhouse-transport.contract.js';
import { ChdbTransport } from './chdb.transport.js';

clickHouseTransportContract(
  'chDB',
  () => Promise.resolve(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-')))),
  {
    modern: true,
  },
);

describe('ChdbTransport', () => {
  it('refuses a second data directory while one is open in the process', async () => {
    const first = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-')));
    expect(() => new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-')))).toThrow(/already has .* open/);
    await first.close();
    const second = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-')));
    await second.close();
  });

  it("runs the engine with a background queue of 16 tasks, so a redaction's mutation of every part goes at once", async () => {
    const transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-')));
    try {
      const settings = await transport.query<{ name: string; value: string }>(
        `SELECT name, value FROM system.server_settings
         WHERE name IN ('background_pool_size', 'background_merges_mutations_concurrency_ratio')`,
      );
      const value = (name: string) => Number(settings.find((s) => s.name === name)?.value);
      expect(value('background_merges_mutations_concurrency_ratio')).toBe(8);
      expect(
        value('background_pool_size') * value('background_merges_mutations_concurrency_ratio'),
      ).toBeGreaterThanOrEqual(16);
    } finally {
      await transport.close();
    }
  });

  it('finishes a streamed read while other queries and statements run before and during it', async () => {
    const transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-')));
    try {
      let rows = 0;
      // Already running when the stream starts.
      const side: Promise<unknown>[] = [transport.query('SELECT count() AS n FROM numbers(3000000)')];
      let created: Promise<void> = Promise.resolve();
      for await (const row of transport.stream<{ number: number }>('SELECT number FROM numbers(300000)')) {
        rows++;
        if (row.number === 10) side.push(transport.query('SELECT 1 AS x'));
        if (row.number === 20)
          side.push((created = transport.exec('CREATE TABLE IF NOT EXISTS side (a UInt8) ENGINE = Memory')));
        // Calls run side by side (on connections of their own): the insert waits for its table.
        if (row.number === 30)
          side.push(created.then(() => transport.insert({ table: 'side', rows: '{"a":1}\n' })));
      }
      expect(rows).toBe(300000);
      await expect(Promise.all(side)).resolves.toEqual([[{ n: 3000000 }], [{ x: 1 }], undefined, undefined]);
    } finally {
      await transport.close();
    }
  });

  it('takes an insert and a read while a long statement and a long query run, instead of holding them', async () => {
    const transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-')));
    try {
      await transport.exec('CREATE TABLE IF NOT EXISTS quick (a String) ENGINE = MergeTree ORDER BY a');
      const settled: string[] = [];
      // A few seconds each (a recommendations refresh's join, a console read): 12 blocks of 0.25 s.
      const slowly = 'SELECT sleepEachRow(0.25) AS s FROM numbers(12) SETTINGS max_block_size = 1';
      const long = [
        transport
          .exec(`CREATE TABLE slow ENGINE = Memory AS ${slowly}`)
          .then(() => settled.push('statement')),
        transport.query(slowly).then(() => settled.push('query')),
      ];
      const insert = transport.insert({ table: 'quick', rows: '{"a":"x"}\n' });
      const read = insert.then(() => transport.query<{ n: number }>('SELECT count() AS n FROM quick'));
      // Both answered while the long ones still ran: neither waited for them.
      await expect(read).resolves.toEqual([{ n: 1 }]);
      expect(settled).toEqual([]);
      await Promise.all(long);
    } finally {
      await transport.close();
    }
  });

  it("runs statements on one thread and the rest on the engine's threads", async () => {
    const transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-chdb-')));
    try {
      await transport.exec(
        "CREATE TABLE threads ENGINE = Memory AS SELECT toUInt64(getSetting('max_threads')) AS n",
      );
      expect(await transport.query('SELECT n FROM threads')).toEqual([{ n: 1 }]);
      const [calls] = await transport.query<{ n: number }>("SELECT toUInt64(getSetting('max_threads')) AS n");
      expect(calls!.n).toBeGreaterThan(1);
    } finally {
      await transport.close();
    }
  });
});
