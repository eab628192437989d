import { createHash } from 'node:crypto';
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { Buckets } from '@cdp/buckets';
import { ApiError } from '@cdp/contracts';
import type { Logger } from '@cdp/logger';
import { storeType, type AnalyticStore } from '@cdp/store';
import { failureReason, inStep } from './export-failure.js';
import { filterTimeRange, storeTimeBound } from './time-bound.js';
import type { ColumnType, ExportCatalog, ExportCatalogs, ExportObject } from './export-objects.js';
import { compileMembers, type MembersQuery } from './members.compiler.js';
import { exportPrefix, type ExportJob, type ExportState, type ObjectFailure } from './export-record.js';
import type { ExportDelimiter, ExportFormat } from './export-request.js';
import {
  BASE_ALIAS,
  compileObject,
  compileSelect,
  duckType,
  quoteIdent,
  type CompiledColumn,
  type CompiledSelect,
} from './select.compiler.js';

export interface ExportFile {
  /** Where the file is, in the form of the record's `path`: `<bucket>/<tracker_id>/data-exports/<export_id>/<name>`. */
  path: string;
  object: string;
  rows: number;
  bytes: number;
  sha256: string;
}

/** spec/NOTES.md "Exports": the manifest written last. */
export interface CompleteManifest {
  export_id: string;
  state: ExportState;
  files: ExportFile[];
  /** Per object, each column's type, in file order. */
  columns: Record<string, Record<string, ColumnType>>;
  errors?: ObjectFailure[];
}

/** A file placed in the export bucket: its key there, and what complete.json says of it. */
interface PlacedFile {
  key: string;
  file: ExportFile;
}

interface StagedPage {
  path: string;
  /** Fewer rows than a full page: nothing follows. */
  last: boolean;
  lastKey: (string | number)[] | undefined;
}

export interface ExportRunnerOptions {
  /** Local scratch space: staged pages and files before they go to the bucket. */
  tmpDir: string;
  /** Rows read from the store per page, and so at most per file (spec: sorts apply per file). */
  rowsPerFile: number;
  /** DuckDB's memory bound; it spills to tmpDir beyond. */
  memoryLimitMb: number;
  threads: number;
}

const DELIMITERS: Record<ExportDelimiter, string> = { comma: ',', tab: '\t', pipe: '|' };

/** SQL literal for a path this code generated (never user input); quoted all the same. */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

function chIdent(name: string): string {
  return `\`${name.replaceAll('\\', '\\\\').replaceAll('`', '\\`')}\``;
}

/** The object's columns as a ClickHouse select list, each under its export name. */
function storeColumns(object: ExportObject): string {
  return object.columns.map((c) => `${c.expr ?? chIdent(c.name)} AS ${chIdent(c.name)}`).join(', ');
}

/**
 * CSV writes numbers in plain decimal notation (spec/NOTES.md "Exports"). DuckDB prints large and
 * tiny doubles as their shortest form with an exponent (`1e+20`, `1e-07`); these macros move the
 * decimal point of that same shortest form, so no digit is invented or lost.
 */
export const DUCKDB_SETUP = [
  `SET TimeZone = 'UTC'`,
  `CREATE OR REPLACE TEMP MACRO cdp_shift(m, p) AS (
    m.s || CASE
      WHEN p <= 0 THEN '0.' || repeat('0', -p) || m.i || m.f
      WHEN p >= len(m.i || m.f) THEN m.i || m.f || repeat('0', p - len(m.i || m.f))
      ELSE substr(m.i || m.f, 1, p) || '.' || substr(m.i || m.f, p + 1)
    END)`,
  `CREATE OR REPLACE TEMP MACRO cdp_plain(t) AS (
    CASE WHEN NOT contains(t, 'e') THEN t
    ELSE cdp_shift(
      regexp_extract(t, '^(-?)(\\d+)\\.?(\\d*)e([+-]?\\d+)$', ['s', 'i', 'f', 'e']),
      len(regexp_extract(t, '^-?(\\d+)', 1)) + CAST(regexp_extract(t, 'e([+-]?\\d+)$', 1) AS INTEGER))
    END)`,
  `CREATE OR REPLACE TEMP MACRO cdp_trim_scale(t) AS (
    CASE WHEN contains(t, '.') THEN rtrim(rtrim(t, '0'), '.') ELSE t END)`,
];

export function plainNumber(sql: string): string {
  return `cdp_plain(CAST(${sql} AS VARCHAR))`;
}

/**
 * An exact decimal as CSV text: every digit it holds, without the zeros its fixed scale pads it with
 * (`99999999999999.9999`, `123456789012345678`, `0.5`), never an exponent.
 */
export function plainDecimal(sql: string): string {
  return `cdp_trim_scale(CAST(${sql} AS VARCHAR))`;
}

function outputColumn(c: CompiledColumn, format: ExportFormat): string {
  const typed = `CAST(${c.sql} AS ${duckType(c.type)})`;
  const value =
    format !== 'CSV'
      ? typed
      : c.type === 'number'
        ? plainNumber(typed)
        : c.type === 'decimal'
          ? plainDecimal(typed)
          : typed;
  return `${value} AS ${quoteIdent(c.name)}`;
}

/**
 * Runs one export job: rows come from the store page by page (a page per file, in the table's key
 * order) as Parquet staged on local disk; DuckDB runs the compiled select over each page — joins for
 * relation paths, the filter with bound parameters, the sorts — and writes the file; the file goes to
 * the export bucket with its size and hash; `complete.json` goes last. Memory is bounded by two pages
 * (the one written and the next one staged), whatever the size of the table.
 */
export class ExportRunner {
  constructor(
    private readonly store: AnalyticStore,
    private readonly buckets: Buckets,
    private readonly catalogs: ExportCatalogs,
    private readonly options: ExportRunnerOptions,
    private readonly logger: Logger,
  ) {}

  async run(job: ExportJob, signal: AbortSignal): Promise<CompleteManifest> {
    const { record } = job;
    const prefix = exportPrefix(job.trackerId, record.id);
    // A resumed job starts over: nothing a dead attempt left may mix with this one's files.
    for (const key of await this.buckets.list('export', prefix)) await this.buckets.remove('export', key);
    const work = join(this.options.tmpDir, record.id);
    await rm(work, { recursive: true, force: true });
    await mkdir(join(work, 'duckdb'), { recursive: true });
    const stager = await this.duckdb(work);
    const manifest: CompleteManifest = { export_id: record.id, state: 'completed', files: [], columns: {} };
    const errors: ObjectFailure[] = [];
    try {
      const catalog = await this.catalogs.forAccount(job.account, true);
      const plans: { object: string; plan: () => CompiledSelect }[] = record.detail.select
        ? [{ object: record.detail.select.object, plan: () => compileSelect(record.detail.select!, catalog) }]
        : record.detail.objects.map((name) => ({
            object: name,
            plan: () => {
              const object = catalog.object(name);
              if (!object) throw ApiError.notFound(`unable to locate object ${name}`);
              return compileObject(object);
            },
          }));
      for (const { object, plan } of plans) {
        signal.throwIfAborted();
        const placed: PlacedFile[] = [];
        try {
          const compiled = plan();
          // A filter bounding the object's time column reads only the months it can match.
          const range = filterTimeRange(record.detail.select?.filter, compiled.object);
          const bound = range && storeTimeBound(range, compiled.object.timeColumn!);
          await this.exportObject(job, catalog, compiled, stager.db, work, signal, placed, bound);
          manifest.files.push(...placed.map((p) => p.file));
          manifest.columns[object] = Object.fromEntries(compiled.columns.map((c) => [c.name, c.type]));
        } catch (err) {
          if (signal.aborted) throw err;
          // The export location holds only what complete.json lists: a failed object leaves no files.
          for (const p of placed) await this.buckets.remove('export', p.key).catch(() => undefined);
          // The user reads which object and which step failed; the engine's own text stays here.
          this.logger.error(
            { export: record.id, account: job.account, object, err },
            'export of an object failed',
          );
          errors.push({ object, reason: failureReason(object, record.detail.format, err) });
        }
      }
      if (errors.length) {
        manifest.state = 'completed_with_errors';
        manifest.errors = errors;
      }
      signal.throwIfAborted();
      await inStep('place', () =>
        this.buckets.write('export', `${prefix}/complete.json`, `${JSON.stringify(manifest, null, 2)}\n`),
      );
      return manifest;
    } finally {
      stager.close();
      await rm(work, { recursive: true, force: true });
    }
  }

  private async exportObject(
    job: ExportJob,
    catalog: ExportCatalog,
    plan: CompiledSelect,
    /** Reads the staged pages (count, last key) while another instance writes the page before. */
    stageDb: DuckDBConnection,
    work: string,
    signal: AbortSignal,
    /** Receives each file as it lands in the bucket. */
    files: PlacedFile[],
    bound?: { sql: string; params: Record<string, unknown> },
  ): Promise<void> {
    const { object } = plan;
    const { format, delimiter } = job.record.detail;
    const ext = format === 'CSV' ? 'csv' : 'parquet';
    const prefix = exportPrefix(job.trackerId, job.record.id);
    for (const o of [object, ...plan.joins.map((j) => j.object)]) await this.declare(job.account, o);
    // Related objects are staged whole, once per object exported.
    const staged = new Map<string, string>();
    for (const j of plan.joins) {
      const path = join(work, `${object.name}-${j.alias}.parquet`);
      await inStep('read', () =>
        this.store.writeParquet(
          job.account,
          `SELECT ${storeColumns(j.object)} FROM ${j.object.from}`,
          {},
          path,
        ),
      );
      staged.set(j.alias, path);
    }
    // A segment's members: the same selection as its size, as of the run's start, read with each page.
    const members = job.members && compileMembers(job.members, catalog, Date.now());
    const stage = async (page: number, after: (string | number)[] | undefined): Promise<StagedPage> => {
      signal.throwIfAborted();
      const path = join(work, `${object.name}-page-${page}.parquet`);
      const { sql, params } = pageQuery(object, after, this.options.rowsPerFile, { bound, members });
      await inStep('read', () => this.store.writeParquet(job.account, sql, params, path));
      const counted = await stageDb.runAndReadAll(
        `SELECT count(*)::BIGINT AS n FROM read_parquet(${literal(path)})`,
      );
      const rows = Number(counted.getRowObjectsJS()[0]!.n);
      const last = rows < this.options.rowsPerFile;
      return { path, last, lastKey: last ? undefined : await lastKey(stageDb, object, path) };
    };
    const joins = plan.joins
      .map((j) => {
        const on = j.relation.joinFields
          .map((f) => `${j.from}.${quoteIdent(f.parent)} = ${j.alias}.${quoteIdent(f.child)}`)
          .join(' AND ');
        return ` LEFT JOIN read_parquet(${literal(staged.get(j.alias)!)}) AS ${j.alias} ON ${on}`;
      })
      .join('');
    const options =
      format === 'CSV'
        ? `FORMAT csv, HEADER true, DELIMITER ${literal(DELIMITERS[delimiter])}, QUOTE '"', ESCAPE '"', TIMESTAMPFORMAT '%Y-%m-%dT%H:%M:%S.%gZ'`
        : // Row groups cut by size, not only by rows: a wide page's groups would otherwise hold ~300 MB.
          `FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE_BYTES '16MB'`;

    // The store stages the next page while DuckDB writes this one: two engines, one page apart.
    let next: Promise<StagedPage> | undefined = stage(0, undefined);
    try {
      for (let page = 0; next; page++) {
        const current: StagedPage = await next;
        next = current.last ? undefined : stage(page + 1, current.lastKey);
        // A failure of the page being staged surfaces when it is awaited, not as an unhandled one.
        next?.catch(() => undefined);
        signal.throwIfAborted();
        const name = `${object.name}_${String(page).padStart(5, '0')}.${ext}`;
        const out = join(work, name);
        const select =
          `SELECT ${plan.columns.map((c) => outputColumn(c, format)).join(', ')} FROM read_parquet(${literal(current.path)}) AS ${BASE_ALIAS}${joins}` +
          (plan.where ? ` WHERE ${plan.where}` : '') +
          (plan.orderBy ? ` ORDER BY ${plan.orderBy}` : '');
        // One DuckDB per page: what it allocated for a page is given back before the next one.
        const rows = await inStep('write', async () => {
          const writer = await this.duckdb(work);
          try {
            const copy = await writer.db.prepare(`COPY (${select}) TO ${literal(out)} (${options})`);
            if (plan.params.length) copy.bind(plan.params);
            const result = await copy.runAndReadAll();
            return Number(result.getRowsJS()[0]?.[0] ?? 0);
          } finally {
            writer.close();
          }
        });
        await rm(current.path, { force: true });
        // An object with no matching rows still gets one file, so its columns are there to read.
        if (rows > 0 || (current.last && files.length === 0)) {
          const key = `${prefix}/${name}`;
          const { bytes, sha256 } = await inStep('place', () => this.moveIn(key, out));
          // Named as the record names the location (spec "Export record": `<bucket>/<tracker_id>/…`).
          files.push({
            key,
            file: { path: `${job.record.path}/${name}`, object: object.name, rows, bytes, sha256 },
          });
        } else {
          await rm(out, { force: true });
        }
      }
    } finally {
      await next?.catch(() => undefined);
    }
    for (const path of staged.values()) await rm(path, { force: true });
  }

  /**
   * Has the store hold every column the schema declares for the object (the schema leads, the data
   * follows): a field with no value yet, or an object with no record yet, exports as empty columns.
   * Idempotent, so a crash or a concurrent processor adding the same column changes nothing.
   */
  private async declare(account: string, object: ExportObject): Promise<void> {
    const declared = object.declared;
    if (!declared) return;
    await inStep('read', () =>
      declared.kind === 'object'
        ? this.store.ensureObjectTable(account, declared.table, declared.columns)
        : this.store.addColumns(account, declared.table, declared.columns),
    );
  }

  private async duckdb(work: string): Promise<{ db: DuckDBConnection; close(): void }> {
    const instance = await DuckDBInstance.create(':memory:', {
      memory_limit: `${this.options.memoryLimitMb}MB`,
      threads: String(this.options.threads),
      temp_directory: join(work, 'duckdb'),
      // Each staged page is read once: caching it would only grow the memory with the table.
      enable_external_file_cache: 'false',
      // Order comes from the sorts; without them, keeping the page's order would only cost memory.
      preserve_insertion_order: 'false',
    });
    const db = await instance.connect();
    try {
      for (const statement of DUCKDB_SETUP) await db.run(statement);
    } catch (err) {
      db.closeSync();
      instance.closeSync();
      throw err;
    }
    return {
      db,
      close: () => {
        db.closeSync();
        instance.closeSync();
      },
    };
  }

  /** Hashes a finished file, then moves it into the export bucket. */
  private async moveIn(key: string, file: string): Promise<{ bytes: number; sha256: string }> {
    const hash = createHash('sha256');
    let bytes = 0;
    // One buffer, reused: a stream's fresh chunk per read would leave the memory to the GC's pace.
    const buffer = Buffer.allocUnsafe(1 << 20);
    const handle = await open(file, 'r');
    try {
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        hash.update(buffer.subarray(0, bytesRead));
        bytes += bytesRead;
      }
    } finally {
      await handle.close();
    }
    await this.buckets.moveIn('export', key, file);
    return { bytes, sha256: hash.digest('hex') };
  }
}
/**
 * The next page of an object in its key order: keyset paging (rows after the last key of the page
 * before), so every page costs the same however far into the table it is.
 */
export function pageQuery(
  object: ExportObject,
  after: (string | number)[] | undefined,
  limit: number,
  narrow: {
    /** A condition every row read must meet (the filter's time bound), with its parameters. */
    bound?: { sql: string; params: Record<string, unknown> };
    /** Only these customers (a segment's members, selecting `svc_id`). */
    members?: MembersQuery;
  } = {},
): { sql: string; params: Record<string, unknown> } {
  const { bound, members } = narrow;
  const key = object.pageKey.map(chIdent).join(', ');
  const params: Record<string, unknown> = { ...bound?.params, ...members?.params };
  const where: string[] = [];
  if (after) {
    const values = object.pageKey.map((name, i) => {
      const type = object.columns.find((c) => c.name === name)!.type;
      params[`k${i}`] = after[i];
      if (type === 'timestamp') return `fromUnixTimestamp64Milli({k${i}:Int64}, 'UTC')`;
      if (type === 'integer') return `{k${i}:Int64}`;
      // A custom object's number key: its exact text, read back as the column's own decimal type.
      if (type === 'decimal') return `{k${i}:${storeType('number')}}`;
      return `{k${i}:String}`;
    });
    // The tuple comparison alone does not narrow the primary-key range (ClickHouse reads every granule
    // from the table's start); the bound on the leading key column does, so a page reads only its rows.
    const first = chIdent(object.pageKey[0]!);
    where.push(
      values.length === 1
        ? `${first} > ${values[0]}`
        : `${first} >= ${values[0]} AND (${key}) > (${values.join(', ')})`,
    );
  }
  if (bound) where.push(bound.sql);
  if (members) where.push(`svc_id GLOBAL IN (${members.sql})`);
  return {
    sql: `SELECT ${storeColumns(object)} FROM ${object.from}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${key} LIMIT ${Math.floor(limit)}`,
    params,
  };
}

async function lastKey(
  db: DuckDBConnection,
  object: ExportObject,
  pagePath: string,
): Promise<(string | number)[]> {
  const exprs = object.pageKey.map((name, i) => {
    const type = object.columns.find((c) => c.name === name)!.type;
    const value =
      type === 'timestamp'
        ? `epoch_ms(${quoteIdent(name)})`
        : type === 'decimal'
          ? `CAST(${quoteIdent(name)} AS VARCHAR)`
          : quoteIdent(name);
    return `${value} AS k${i}`;
  });
  const result = await db.runAndReadAll(
    `SELECT ${exprs.join(', ')} FROM read_parquet(${literal(pagePath)}, file_row_number = true) ORDER BY file_row_number DESC LIMIT 1`,
  );
  const row = result.getRowsJS()[0]!;
  return row.map((v) => (typeof v === 'bigint' ? Number(v) : (v as string)));
}
