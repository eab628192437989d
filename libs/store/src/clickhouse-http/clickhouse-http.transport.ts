import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { faultPoint } from '@cdp/faults';
import {
  PARQUET_ROW_GROUP,
  storeCall,
  toStoreError,
  type ClickHouseTransport,
  type InsertBlock,
} from '../clickhouse-transport.js';
import { HostRing, hostUrls } from './host-ring.js';

/**
 * ClickHouse servers over HTTP (`@clickhouse/client`), running exactly the SQL the chDB transport
 * runs. Inserts are synchronous (no async_insert): the processor acknowledges the bus only once the
 * rows are in a part. `url` may list several hosts, comma-separated (the replicas of a cluster, or
 * their load balancers): calls take them in turn and move past one that cannot be reached (HostRing).
 */
export class ClickHouseHttpTransport implements ClickHouseTransport {
  readonly name = 'clickhouse';
  private readonly clients: HostRing<ClickHouseClient>;
  /** Settings every insert carries; decided once from the server's version. */
  private insertSettings: Promise<Record<string, number>> | undefined;

  constructor(options: { url: string; user: string; password: string }) {
    this.clients = new HostRing(
      hostUrls(options.url).map((url) =>
        createClient({
          url,
          username: options.user,
          password: options.password,
          request_timeout: 120_000,
          clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
        }),
      ),
    );
  }

  async exec(sql: string): Promise<void> {
    await storeCall(() => this.clients.call((client) => client.command({ query: sql })));
  }

  async insert({ table, rows, settings = {}, columns }: InsertBlock): Promise<void> {
    // A test makes the store refuse every write a while here (`store.transport.insert:throw~MS`).
    faultPoint('store.transport.insert');
    const base = await (this.insertSettings ??= this.decideInsertSettings());
    // exec sends the text as it is; insert() would serialise each chunk as a JSON row once more.
    const result = await storeCall(() =>
      this.clients.call((client) =>
        client.exec({
          query: columns
            ? `INSERT INTO ${table} (${columns.join(', ')}) FORMAT JSONCompactEachRow`
            : `INSERT INTO ${table} FORMAT JSONEachRow`,
          values: Readable.from([Buffer.from(rows)]),
          clickhouse_settings: { ...base, ...settings },
        }),
      ),
    );
    result.stream.resume();
    await new Promise((resolve, reject) => result.stream.once('end', resolve).once('error', reject));
  }

  /**
   * Servers since 21.11 may batch inserts asynchronously (on by default in recent ones): turned off,
   * so an insert has landed when it returns. Older servers do not know the setting and refuse it.
   */
  private async decideInsertSettings(): Promise<Record<string, number>> {
    const [row] = await this.query<{ v: string }>('SELECT version() AS v');
    const [major = 0, minor = 0] = (row?.v ?? '0').split('.').map(Number);
    return major > 21 || (major === 21 && minor >= 11) ? { async_insert: 0 } : {};
  }

  async query<T>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    return storeCall(async () => {
      const result = await this.clients.call((client) =>
        client.query({ query: sql, query_params: params, format: 'JSONEachRow' }),
      );
      return result.json<T>();
    });
  }

  async *stream<T>(sql: string, params: Record<string, unknown> = {}): AsyncIterable<T> {
    const result = await storeCall(() =>
      this.clients.call((client) =>
        client.query({ query: sql, query_params: params, format: 'JSONEachRow' }),
      ),
    );
    try {
      for await (const rows of result.stream()) {
        for (const row of rows as { json<R>(): R }[]) yield row.json<T>();
      }
    } catch (err) {
      throw toStoreError(err);
    }
  }

  /** The server's `INTO OUTFILE` would write on its own host: the Parquet body is streamed to disk here. */
  async writeParquet(sql: string, params: Record<string, unknown>, path: string): Promise<void> {
    await storeCall(async () => {
      const result = await this.clients.call((client) =>
        client.exec({
          query: `${sql} FORMAT Parquet`,
          query_params: params,
          clickhouse_settings: {
            output_format_parquet_row_group_size: String(PARQUET_ROW_GROUP),
            output_format_parquet_compression_method: 'lz4',
          },
        }),
      );
      await pipeline(result.stream, createWriteStream(path, { flags: 'wx' }));
    });
  }

  /** Ready while any host answers. */
  async ping(): Promise<void> {
    await storeCall(() =>
      this.clients.call(async (client) => {
        const result = await client.ping();
        if (result.success) return;
        const error = (result as { error?: unknown }).error;
        throw error instanceof Error ? error : new Error('ping failed', { cause: error });
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.all().map((client) => client.close()));
  }
}
