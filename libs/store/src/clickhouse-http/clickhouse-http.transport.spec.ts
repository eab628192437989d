import { loadConfig } from '@cdp/config';
import { clickHouseTransportContract } from '../clickhouse-transport.contract.js';
import { ClickHouseHttpTransport } from './clickhouse-http.transport.js';

/**
 * The transport contract against a ClickHouse server, when CLICKHOUSE_URL names one. CI installs
 * Debian's clickhouse-server (18.16, old), so the part of the contract that needs a current engine
 * (parameters, deduplication tokens, compact rows) runs on chDB only.
 */
const { clickhouse } = loadConfig();
const describeIfServer = clickhouse.named ? describe : describe.skip;

describeIfServer('ClickHouse server over HTTP', () => {
  clickHouseTransportContract(
    `ClickHouse server at ${clickhouse.url}`,
    () => Promise.resolve(new ClickHouseHttpTransport(clickhouse)),
    {
      modern: false,
    },
  );
});
