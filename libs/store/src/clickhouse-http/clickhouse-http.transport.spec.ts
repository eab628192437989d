import { clickHouseTransportContract } from '../clickhouse-transport.contract.js';
import { ClickHouseHttpTransport } from './clickhouse-http.transport.js';

/**
 * The transport contract against a ClickHouse server, when CLICKHOUSE_URL names one. CI installs
 * Debian's clickhouse-server (18.16, old): it runs the part of the contract that version speaks;
 * CLICKHOUSE_MODERN=1 runs the rest against a current server.
 */
const url = process.env.CLICKHOUSE_URL;
const describeIfServer = url ? describe : describe.skip;

describeIfServer('ClickHouse server over HTTP', () => {
  clickHouseTransportContract(
    `ClickHouse server at ${url}`,
    () =>
      Promise.resolve(
        new ClickHouseHttpTransport({
          url: url!,
          user: process.env.CLICKHOUSE_USER ?? 'default',
          password: process.env.CLICKHOUSE_PASSWORD ?? '',
        }),
      ),
    { modern: process.env.CLICKHOUSE_MODERN === '1' },
  );
});
