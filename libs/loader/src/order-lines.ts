import type { EventInput } from '@cdp/domain';
import { lineValues } from './csv-rows.js';
import type { Column } from './csv-columns.js';
import { eventRecord, type LoadContext, type LoadedRecord, type RecordProblem } from './record-rules.js';

/** A CSV line of an orders file, with where it came from. */
export interface SourceLine {
  line: number;
  values: string[];
  raw: string;
}

/** One order of an orders file: its lines, and the order event they make or why it is not loaded. */
export interface OrderGroup {
  lines: SourceLine[];
  result: LoadedRecord | RecordProblem[];
}

/**
 * Groups the lines of an orders CSV into orders (spec "Bulk file ingestion" rules 4–8): an order's lines
 * are consecutive; a new order starts when `order_id`, `action` or `ts` changes (an empty one on a
 * following line continues the order); order-level values come from the first line; each line gives an
 * item; the subtotal is the first line's or the sum of the items' (the API's own rule); a custom
 * order-level value that differs from the first line's makes the whole order not loaded.
 */
export class OrderGrouper {
  private current: SourceLine[] = [];
  private keyOf: { order_id?: string; action?: string; ts?: string } = {};

  constructor(
    private readonly columns: readonly Column[],
    private readonly context: LoadContext,
  ) {}

  private readonly index = (name: string): number =>
    this.columns.findIndex((c) => c.name === name && c.to !== 'dropped' && c.to !== 'custom');

  /** Adds a line; returns the order it closed, if it starts a new one. */
  push(line: SourceLine): OrderGroup | undefined {
    const key = {
      order_id: this.valueOf(line, 'order_id'),
      action: this.valueOf(line, 'action'),
      ts: this.valueOf(line, 'ts'),
    };
    const continues =
      this.current.length > 0 &&
      (['order_id', 'action', 'ts'] as const).every((k) => key[k] === '' || key[k] === (this.keyOf[k] ?? ''));
    if (continues) {
      this.current.push(line);
      return undefined;
    }
    const closed = this.flush();
    this.current = [line];
    this.keyOf = key;
    return closed;
  }

  /** Closes the order in progress (at the end of the file). */
  flush(): OrderGroup | undefined {
    if (this.current.length === 0) return undefined;
    const lines = this.current;
    this.current = [];
    return { lines, result: this.order(lines) };
  }

  private valueOf(line: SourceLine, name: string): string {
    const i = this.index(name);
    return i < 0 ? '' : (line.values[i] ?? '');
  }

  private order(lines: SourceLine[]): LoadedRecord | RecordProblem[] {
    const read = lines.map((l) => lineValues(this.columns, l.values));
    const first = read[0]!;
    const problems: RecordProblem[] = read.flatMap((r, i) =>
      r.problems.map((p) => ({ field: p.field, reason: `line ${lines[i]!.line}: ${p.reason}` })),
    );
    // Rule 7: custom order-level values are shared by the order's lines.
    for (const [i, r] of read.entries()) {
      for (const [name, value] of Object.entries(r.custom)) {
        if (first.custom[name] !== undefined && first.custom[name] !== value) {
          problems.push({
            field: name,
            reason: `line ${lines[i]!.line}: differs from the order's first line (${JSON.stringify(first.custom[name])}); the order is not loaded`,
          });
        }
      }
    }
    if (problems.length) return problems;
    const items = read.map((r) => r.item).filter((item) => Object.keys(item).length > 0);
    const order: Record<string, unknown> = { ...first.order, items };
    const identifiers = { ...first.identifiers };
    if (typeof first.order.email === 'string' && identifiers.email === undefined)
      identifiers.email = first.order.email;
    const data: Record<string, unknown> = { ...first.custom, order };
    if (first.order.ts !== undefined) data.ts = first.order.ts;
    const input: EventInput = { type: 'order', identifiers, data };
    if (first.top.action !== undefined) input.action = first.top.action;
    return eventRecord(input, this.context);
  }
}
