import { mkdirSync } from 'node:fs';
import { Session, drainPending } from 'chdb';
import { faultPoint } from '@cdp/faults';
import {
  PARQUET_SETTINGS,
  StoreError,
  storeCall,
  toStoreError,
  type ClickHouseTransport,
  type InsertBlock,
} from '../clickhouse-transport.js';
import { SessionGate } from './session-gate.js';

/**
 * The engine writes a staged file inside this process, beside DuckDB writing the page before: one
 * thread, small blocks and row groups of at most 8 MB keep its share of the memory near 100 MB per
 * page, where the defaults (a stream per core, 512 MB row groups) take three times that.
 */
const IN_PROCESS_STAGING = `max_threads = 1, max_block_size = 8192, output_format_parquet_row_group_size_bytes = ${8 << 20}`;

/**
 * Server configuration (after `--`). chDB's background pool has two threads here, and its queue
 * holds pool × ratio tasks (ClickHouse's ratio: 2). A mutation is one task per part: past four parts
 * it runs in waves, and between waves each table's scheduler sleeps 0.1 s plus up to 1 s at random.
 * A redaction (one mutation a table, waited for) of eight tables of ten parts took 9–12 s, stopping
 * the embedded bus that long; with room for 16 tasks it takes ~0.5 s. The threads stay two, so merges
 * use no more CPU (the ingest benchmark did not move; docs/benchmarks.md "Waves of a mutation on chDB").
 */
const BACKGROUND_QUEUE = ['--background_merges_mutations_concurrency_ratio=8'];

/**
 * ClickHouse in-process. chDB holds one data directory per process, so exactly one transport (one
 * session) may exist at a time; closing it waits for every native call still running.
 */
export class ChdbTransport implements ClickHouseTransport {
  readonly name = 'chdb';
  private static openPath: string | undefined;
  private session: Session | undefined;
  /** Streams have the session to themselves (see SessionGate). */
  private readonly gate = new SessionGate();

  constructor(path: string) {
    if (ChdbTransport.openPath !== undefined) {
      throw new Error(`chDB already has ${ChdbTransport.openPath} open in this process; close it first`);
    }
    mkdirSync(path, { recursive: true });
    // Both transports read 64-bit integers as JSON numbers (counts and ids stay far below 2^53).
    this.session = new Session(path, {
      connectionArgs: ['--output_format_json_quote_64bit_integers=0', '--', ...BACKGROUND_QUEUE],
    });
    ChdbTransport.openPath = path;
  }

  private get db(): Session {
    if (!this.session) throw new StoreError('the chDB session is closed', undefined);
    return this.session;
  }

  async exec(sql: string): Promise<void> {
    await this.gate.shared(() => storeCall(() => this.db.queryAsync(sql)));
  }

  async insert({ table, rows, settings = {}, columns }: InsertBlock): Promise<void> {
    // A test makes the store refuse every write a while here (`store.transport.insert:throw~MS`).
    faultPoint('store.transport.insert');
    const format = columns ? 'JSONCompactEachRow' : 'JSONEachRow';
    await this.gate.shared(() =>
      storeCall(() =>
        this.db.insert({
          table,
          values: Buffer.from(rows),
          format,
          settings,
          ...(columns ? { columns } : {}),
        }),
      ),
    );
  }

  async query<T>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const result = await this.gate.shared(() =>
      storeCall(() => this.db.queryBindAsync(sql, params, { format: 'JSONEachRow' })),
    );
    const text = result.text();
    if (!text) return [];
    return text
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as T);
  }

  async *stream<T>(sql: string, params: Record<string, unknown> = {}): AsyncIterable<T> {
    const release = await this.gate.exclusive();
    let stream: ReturnType<Session['queryStreamBind']> | undefined;
    try {
      stream = this.db.queryStreamBind(sql, params, { format: 'JSONEachRow' });
      for await (const row of stream.rows<T>()) yield row;
    } catch (err) {
      throw toStoreError(err);
    } finally {
      stream?.cancel();
      release();
    }
  }

  /** The engine writes the file itself (`INTO OUTFILE`): streaming Parquet chunks are separate files. */
  async writeParquet(sql: string, params: Record<string, unknown>, path: string): Promise<void> {
    const target = `'${path.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
    await this.gate.shared(() =>
      storeCall(() =>
        this.db.queryBindAsync(
          `${sql} INTO OUTFILE ${target} FORMAT Parquet SETTINGS ${PARQUET_SETTINGS}, ${IN_PROCESS_STAGING}`,
          params,
        ),
      ),
    );
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (!this.session) return;
    this.session.close();
    this.session = undefined;
    await drainPending();
    ChdbTransport.openPath = undefined;
  }
}
