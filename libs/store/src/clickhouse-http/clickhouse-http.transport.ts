import { Readable } from 'node:stream';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { StoreError, type ClickHouseTransport } from '../clickhouse-transport.js';

/**
 * A ClickHouse server over HTTP (`@clickhouse/client`), running exactly the SQL the chDB transport
 * runs. Inserts are synchronous (no async_insert): the processor acknowledges the bus only once the
 * rows are in a part.
 */
export class ClickHouseHttpTransport implements ClickHouseTransport {
  readonly name = 'clickhouse';
  private readonly client: ClickHouseClient;

  constructor(options: { url: string; user: string; password: string }) {
    this.client = createClient({
      url: options.url,
      username: options.user,
      password: options.password,
      request_timeout: 120_000,
      clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
    });
  }

  async exec(sql: string): Promise<void> {
    await wrap(() => this.client.command({ query: sql }));
  }

  async insert(
    table: string,
    jsonEachRow: string,
    settings: Record<string, string | number> = {},
  ): Promise<void> {
    await wrap(() =>
      this.client.insert({
        table,
        values: Readable.from([jsonEachRow]),
        format: 'JSONEachRow',
        clickhouse_settings: { async_insert: 0, ...settings },
      }),
    );
  }

  async query<T>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    return wrap(async () => {
      const result = await this.client.query({ query: sql, query_params: params, format: 'JSONEachRow' });
      return result.json<T>();
    });
  }

  async *stream<T>(sql: string, params: Record<string, unknown> = {}): AsyncIterable<T> {
    const result = await wrap(() =>
      this.client.query({ query: sql, query_params: params, format: 'JSONEachRow' }),
    );
    try {
      for await (const rows of result.stream()) {
        for (const row of rows as { json<R>(): R }[]) yield row.json<T>();
      }
    } catch (err) {
      throw toStoreError(err);
    }
  }

  async ping(): Promise<void> {
    const result = await this.client.ping();
    if (!result.success)
      throw toStoreError((result as { error?: unknown }).error ?? new Error('ping failed'));
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

async function wrap<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw toStoreError(err);
  }
}

function toStoreError(err: unknown): StoreError {
  const code = Number((err as { code?: string | number }).code);
  return new StoreError(
    err instanceof Error ? err.message : String(err),
    Number.isFinite(code) ? code : undefined,
    { cause: err },
  );
}
