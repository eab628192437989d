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
});
