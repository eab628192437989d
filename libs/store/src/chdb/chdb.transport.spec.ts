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
      for await (const row of transport.stream<{ number: number }>('SELECT number FROM numbers(300000)')) {
        rows++;
        if (row.number === 10) side.push(transport.query('SELECT 1 AS x'));
        if (row.number === 20)
          side.push(transport.exec('CREATE TABLE IF NOT EXISTS side (a UInt8) ENGINE = Memory'));
        if (row.number === 30) side.push(transport.insert({ table: 'side', rows: '{"a":1}\n' }));
      }
      expect(rows).toBe(300000);
      await expect(Promise.all(side)).resolves.toEqual([[{ n: 3000000 }], [{ x: 1 }], undefined, undefined]);
    } finally {
      await transport.close();
    }
  });
});
