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
 * chDB runs one call at a time on a native connection: on a single one, a recommendations refresh's
 * statement (0.4–1 s under load) held every ingest insert behind it, and the ingest benchmark's paced
 * 202 → visible p99 went past a second (docs/benchmarks.md "One connection held the inserts").
 * Connections to one data directory share the engine and its data, and their calls run side by side, so
 * the transport opens several, in two lanes:
 *
 * - `calls`: inserts, queries, streams and Parquet writes, on the engine's threads;
 * - `statements` (`exec`: DDL, mutations, and the recommendations refresh's INSERT … SELECT) on one
 *   thread each. In process the engine shares the machine and the process's memory with the API and the
 *   processor: a refresh reading with every core (a hash table each) beside the inserts took the ingest
 *   benchmark's peak RSS past 1 GB (1,019 MB, median of three, against 929 on one connection; 976–1,000
 *   with the refresh on one thread). The Parquet staging above is kept to one thread for the same reason.
 *
 * Each call runs on its lane's connection with the fewest calls, a new one opened while those are busy,
 * up to the lane's size. Four in all, as many as the libuv threads that run the calls (four by default).
 */
const LANES = {
  calls: { size: 2, settings: [] as string[] },
  statements: { size: 2, settings: ['--max_threads=1'] },
};
type Lane = keyof typeof LANES;

/** One native connection, and who may use it now (streams have it to themselves). */
interface Connection {
  session: Session;
  gate: SessionGate;
}

/**
 * ClickHouse in-process. chDB holds one data directory per process, so exactly one transport may exist
 * at a time; it opens connections to that directory as calls need them (LANES), and closing it waits for
 * every native call still running.
 */
export class ChdbTransport implements ClickHouseTransport {
  readonly name = 'chdb';
  private static openPath: string | undefined;
  private readonly lanes: Record<Lane, Connection[]> = { calls: [], statements: [] };
  private closed = false;

  constructor(private readonly path: string) {
    if (ChdbTransport.openPath !== undefined) {
      throw new Error(`chDB already has ${ChdbTransport.openPath} open in this process; close it first`);
    }
    mkdirSync(path, { recursive: true });
    this.connect('calls');
    this.connect('statements');
    ChdbTransport.openPath = path;
  }

  private connect(lane: Lane): Connection {
    const connection: Connection = {
      // Both transports read 64-bit integers as JSON numbers (counts and ids stay far below 2^53). The
      // engine's own settings (after `--`) take effect with the first connection; later ones share it.
      session: new Session(this.path, {
        connectionArgs: [
          '--output_format_json_quote_64bit_integers=0',
          ...LANES[lane].settings,
          '--',
          ...BACKGROUND_QUEUE,
        ],
      }),
      gate: new SessionGate(),
    };
    this.lanes[lane].push(connection);
    return connection;
  }

  /**
   * The lane's connection for a call or a stream: the one with the fewest calls among those no stream
   * holds or waits for (any, when streams hold them all); a new one when that one is busy and the lane
   * has room.
   */
  private connection(lane: Lane): Connection {
    if (this.closed) throw new StoreError('the chDB session is closed', undefined);
    const open = this.lanes[lane];
    const free = open.filter((c) => !c.gate.reserved());
    const least = (free.length > 0 ? free : open).reduce((a, b) => (b.gate.load() < a.gate.load() ? b : a));
    if ((least.gate.load() > 0 || free.length === 0) && open.length < LANES[lane].size)
      return this.connect(lane);
    return least;
  }

  /** A call on a connection of the lane, shared with other calls (not with a stream). */
  private shared<T>(lane: Lane, call: (session: Session) => Promise<T>): Promise<T> {
    const { session, gate } = this.connection(lane);
    return gate.shared(() => storeCall(() => call(session)));
  }

  async exec(sql: string): Promise<void> {
    await this.shared('statements', (session) => session.queryAsync(sql));
  }

  async insert({ table, rows, settings = {}, columns }: InsertBlock): Promise<void> {
    // A test makes the store refuse every write a while here (`store.transport.insert:throw~MS`).
    faultPoint('store.transport.insert');
    const format = columns ? 'JSONCompactEachRow' : 'JSONEachRow';
    await this.shared('calls', (session) =>
      session.insert({
        table,
        values: Buffer.from(rows),
        format,
        settings,
        ...(columns ? { columns } : {}),
      }),
    );
  }

  async query<T>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    // chdb runs every query with bound parameters in one chain for the whole process (their parameter
    // state is not kept apart between connections); a query without any runs beside the rest.
    const bound = Object.keys(params).length > 0;
    const result = await this.shared('calls', (session) =>
      bound
        ? session.queryBindAsync(sql, params, { format: 'JSONEachRow' })
        : session.queryAsync(sql, { format: 'JSONEachRow' }),
    );
    const text = result.text();
    if (!text) return [];
    return text
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as T);
  }

  async *stream<T>(sql: string, params: Record<string, unknown> = {}): AsyncIterable<T> {
    const { session, gate } = this.connection('calls');
    const release = await gate.exclusive();
    let stream: ReturnType<Session['queryStreamBind']> | undefined;
    try {
      stream = session.queryStreamBind(sql, params, { format: 'JSONEachRow' });
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
    await this.shared('calls', (session) =>
      session.queryBindAsync(
        `${sql} INTO OUTFILE ${target} FORMAT Parquet SETTINGS ${PARQUET_SETTINGS}, ${IN_PROCESS_STAGING}`,
        params,
      ),
    );
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const connection of [...this.lanes.calls.splice(0), ...this.lanes.statements.splice(0)])
      connection.session.close();
    await drainPending();
    ChdbTransport.openPath = undefined;
  }
}
