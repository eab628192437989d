import { createInterface } from 'node:readline';
import { Transform, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { parse, type CsvError } from 'csv-parse';
import { planColumns } from './csv-columns.js';
import { lineRecord, lineValues } from './csv-rows.js';
import type { FileKind } from './file-names.js';
import { OrderGrouper, type OrderGroup } from './order-lines.js';
import {
  customerRecord,
  eventRecord,
  productRecord,
  v2EventRecord,
  type LoadContext,
  type LoadedRecord,
  type RecordProblem,
} from './record-rules.js';
import { keepExactNumbers } from '@cdp/contracts';
import { withArticle, type EventInput } from '@cdp/domain';

/**
 * One record of a file: the line it starts on, how many lines (records of the file) it covers (an
 * order covers its lines), its text, and the record it makes or its problems.
 */
export interface FileItem {
  line: number;
  lines: number;
  raw: string;
  result: LoadedRecord | RecordProblem[];
  /** Whether a column or field of no meaning had a value in this record (dropped). */
  dropped?: boolean;
}

/** A file that cannot be read at all (no header, a column named twice): rejected whole. */
export class UnreadableFileError extends Error {
  override name = 'UnreadableFileError';
}

export interface FileReading {
  items: AsyncGenerator<FileItem>;
  /** Columns (CSV) or fields (JSON lines) of no meaning for the data type: dropped, reported. */
  dropped: Set<string>;
  /** Bytes of the stored object read so far (compressed bytes for a gzip file). */
  bytes(): number;
}

/** Streams a file's records: memory holds one record (one order) at a time, whatever the file's size. */
export function readFile(source: Readable, kind: FileKind, context: LoadContext): FileReading {
  let bytes = 0;
  const counted = source.pipe(
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        done(null, chunk);
      },
    }),
  );
  source.once('error', (err) => counted.destroy(err));
  const plain = kind.gzip ? counted.pipe(createGunzip()) : counted;
  if (kind.gzip) counted.once('error', (err) => plain.destroy(err));
  const dropped = new Set<string>();
  const items =
    kind.format === 'csv'
      ? csvItems(plain, kind, context, dropped)
      : jsonItems(plain, kind, context, dropped);
  return { items, dropped, bytes: () => bytes };
}

const NEWLINE_REASON =
  'a value must not contain a carriage return or newline (spec "Bulk file ingestion" rule 3)';

async function* csvItems(
  input: Readable,
  kind: FileKind,
  context: LoadContext,
  dropped: Set<string>,
): AsyncGenerator<FileItem> {
  const skipped: FileItem[] = [];
  const parser = input.pipe(
    parse({
      bom: true,
      // Any of the three line ends, mixed in one file: left to detection, the first one found would be
      // the only one, and records ending in another would run together.
      record_delimiter: ['\r\n', '\n', '\r'],
      info: true,
      raw: true,
      relax_column_count: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      on_skip: (err: CsvError | undefined, raw: string | undefined) => {
        const line = Number((err as { lines?: number } | undefined)?.lines ?? 0);
        skipped.push({
          line,
          lines: 1,
          raw: raw ?? '',
          result: [{ field: 'line', reason: err?.message ?? 'cannot be read as CSV' }],
        });
        return undefined;
      },
    }),
  );
  input.once('error', (err) => parser.destroy(err));
  let columns: ReturnType<typeof planColumns> | undefined;
  let header: string[] = [];
  const orders = kind.dataType === 'orders' ? { grouper: undefined as OrderGrouper | undefined } : undefined;
  const fromGroup = (group: OrderGroup): FileItem => ({
    line: group.lines[0]!.line,
    lines: group.lines.length,
    raw: group.lines.map((l) => l.raw).join(''),
    result: group.result,
  });
  for await (const { record, info, raw } of parser as AsyncIterable<{
    record: string[];
    info: { lines: number };
    raw: string;
  }>) {
    while (skipped.length) yield skipped.shift()!;
    // `info.lines` is the line the record ends on; records never span lines in a valid file.
    const line = info.lines - (raw.match(/\n/g)?.length ?? 1) + 1;
    if (!columns) {
      header = record;
      const seen = new Set<string>();
      for (const name of header) {
        if (name === '') throw new UnreadableFileError('the header names an empty column');
        if (seen.has(name)) throw new UnreadableFileError(`the header names the column ${name} twice`);
        seen.add(name);
      }
      columns = planColumns(kind.dataType, header, context);
      for (const c of columns) if (c.to === 'dropped') dropped.add(c.name);
      if (orders) orders.grouper = new OrderGrouper(columns, context);
      continue;
    }
    const problems: RecordProblem[] = [];
    if (record.length !== header.length) {
      problems.push({
        field: 'line',
        reason: `has ${record.length} fields; the header has ${header.length}`,
      });
    }
    const newline = record.findIndex((v) => v.includes('\n') || v.includes('\r'));
    if (newline >= 0) problems.push({ field: header[newline] ?? 'line', reason: NEWLINE_REASON });
    const replaced = record.findIndex((v) => v.includes('\uFFFD'));
    if (replaced >= 0) problems.push({ field: header[replaced] ?? 'line', reason: 'is not valid UTF-8' });
    if (orders) {
      if (problems.length) {
        // A broken line cannot tell which order it belongs to: it closes the order in progress.
        const closed = orders.grouper!.flush();
        if (closed) yield fromGroup(closed);
        yield { line, lines: 1, raw, result: problems };
        continue;
      }
      const closed = orders.grouper!.push({ line, values: record, raw });
      if (closed) yield fromGroup(closed);
      continue;
    }
    if (problems.length) {
      yield { line, lines: 1, raw, result: problems };
      continue;
    }
    const result = lineRecord(
      kind.dataType as 'customers' | 'products' | 'events',
      lineValues(columns, record),
      context,
    );
    yield {
      line,
      lines: 1,
      raw,
      result,
      dropped: columns.some((c, i) => c.to === 'dropped' && record[i] !== ''),
    };
  }
  while (skipped.length) yield skipped.shift()!;
  if (!columns) throw new UnreadableFileError('the file has no header line');
  const last = orders?.grouper?.flush();
  if (last) yield fromGroup(last);
}

/**
 * Which `type`s a JSON-lines file may hold (spec: events files hold events, orders included): an events
 * file takes any event type (`event` for a v3-shaped event that names its own type), never a customer.
 */
function typeProblem(kind: FileKind, type: unknown): RecordProblem | undefined {
  const only = { customers: 'customer', products: 'product', orders: 'order' } as const;
  if (kind.dataType === 'events') {
    if (typeof type === 'string' && type !== '' && type !== 'customer') return undefined;
    return {
      field: 'type',
      reason: 'must be an event type in an events file (customers go in a customers file)',
    };
  }
  if (type === only[kind.dataType]) return undefined;
  return { field: 'type', reason: `must be ${only[kind.dataType]} in ${withArticle(kind.dataType)} file` };
}

async function* jsonItems(
  input: Readable,
  kind: FileKind,
  context: LoadContext,
  dropped: Set<string>,
): AsyncGenerator<FileItem> {
  const lines = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    const result = jsonRecord(text, kind, context, dropped);
    yield { line, lines: 1, raw: `${text}\n`, result, dropped: !Array.isArray(result) && hasDropped(result) };
  }
}

function jsonRecord(
  text: string,
  kind: FileKind,
  context: LoadContext,
  dropped: Set<string>,
): LoadedRecord | RecordProblem[] {
  let value: unknown;
  try {
    value = JSON.parse(keepExactNumbers(text));
  } catch {
    return [{ field: 'line', reason: 'is not a JSON object' }];
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [{ field: 'line', reason: 'is not a JSON object' }];
  const { type, data } = value as { type?: unknown; data?: unknown };
  const wrongType = typeProblem(kind, type);
  if (wrongType) return [wrongType];
  if (!isObject(data)) return [{ field: 'data', reason: 'must be an object' }];
  const result = dataRecord(type as string, data, kind, context);
  if (!Array.isArray(result))
    for (const name of (result.record as { dropped?: string[] }).dropped ?? []) dropped.add(name);
  return result;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Problems named under a path of the line (`data.`); one about the whole object sent is the path's own. */
const under = (prefix: string, problems: RecordProblem[], whole?: string): RecordProblem[] =>
  problems.map((p) => ({
    field: p.field === whole ? prefix.replace(/\.$/, '') : `${prefix}${p.field}`,
    reason: p.reason,
  }));

/**
 * A line's `data` read by the API call it is the payload of, in either form (README "Bulk files"): the
 * original's `/v2/entities` and `/v2/events` bodies (identifiers inside `data`), or the v3 payloads
 * (`{attributes}` of `POST /v3/profiles`; `{identifiers, data}` of `POST /v3/events`). Problems are named
 * where they sit on the line.
 */
function dataRecord(
  type: string,
  data: Record<string, unknown>,
  kind: FileKind,
  context: LoadContext,
): LoadedRecord | RecordProblem[] {
  if (type === 'customer') {
    // The profiles rules name a field as sent in `attributes`; on this line it sits in `data` (flat) or in
    // `data.attributes`.
    const nested = isObject(data.attributes);
    const result = customerRecord(nested ? (data.attributes as Record<string, unknown>) : data, context);
    return Array.isArray(result)
      ? under(nested ? 'data.attributes.' : 'data.', result, 'attributes')
      : result;
  }
  if (type === 'product' && kind.dataType === 'products') {
    const result = productRecord(data, context);
    return Array.isArray(result) ? under('data.', result) : result;
  }
  if (type === 'event' || isObject(data.identifiers) || isObject(data.data)) {
    const event = { ...data } as unknown as EventInput;
    if (type !== 'event') event.type ??= type;
    const result = eventRecord(bulkOrderItems(event), context);
    return Array.isArray(result) ? under('data.', result) : result;
  }
  return v2EventRecord(bulkOrderItems({ type, data }), context);
}

function hasDropped(result: LoadedRecord): boolean {
  return ((result.record as { dropped?: string[] }).dropped?.length ?? 0) > 0;
}

/** Bulk JSON order items may carry quantity and subtotal (and price, discount) as decimal text (spec "Order fields"). */
function bulkOrderItems<T extends { data?: Record<string, unknown> }>(event: T): T {
  const order = event.data?.order as { items?: unknown } | undefined;
  if (!order || !Array.isArray(order.items)) return event;
  const items = order.items.map((item: unknown) => {
    if (typeof item !== 'object' || item === null) return item;
    const copy: Record<string, unknown> = { ...(item as Record<string, unknown>) };
    for (const name of ['quantity', 'subtotal', 'price', 'discount']) {
      const v = copy[name];
      if (typeof v === 'string' && /^-?(\d+(\.\d*)?|\.\d+)$/.test(v)) copy[name] = Number(v);
    }
    return copy;
  });
  return { ...event, data: { ...event.data, order: { ...order, items } } };
}
