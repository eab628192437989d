import { acceptedEntry, rejectedEntry, type Inspector, type Received } from '@cdp/inspector';
import type { ActivityEntry } from './activity.js';
import type { RecordProblem } from './record-rules.js';

/** A file's record is accepted as a `202` would accept it; a refused record or file shows as a `400`. */
const ACCEPTED_STATUS = 202;
const REJECTED_STATUS = 400;

/**
 * Shows a bulk file's records in the event inspector, like the API's tap shows a request's: each record
 * published (with the id and index of the bus message that carries it, so the processor's resolution
 * lands on the same row), each invalid record with its problems, and a rejected file with its reason.
 * Every call starts with `Inspector.offer`, which for an account no console watches is one map lookup
 * and builds nothing: the loader pays nothing while nobody looks.
 */
export class FileInspection {
  private readonly route: string;

  constructor(
    private readonly inspector: Inspector | undefined,
    private readonly entry: ActivityEntry,
  ) {
    this.route = `bulk ${entry.record.path}`;
  }

  /** The records of one published bus message. */
  published(messageId: string, kind: string, records: readonly unknown[]): void {
    if (!this.inspector) return;
    const received: Received = {
      requestId: messageId,
      route: this.route,
      kind: `bulk ${kind}`,
      status: ACCEPTED_STATUS,
    };
    const at = new Date().toISOString();
    this.inspector.offer(
      this.entry.account,
      records.length,
      (index) => acceptedEntry(received, records[index], index, undefined, at),
      (index) => ({ requestId: messageId, index }),
    );
  }

  /** One invalid record of the file, shown as its text with every problem. */
  invalid(line: number, raw: string, problems: readonly RecordProblem[]): void {
    if (!this.inspector) return;
    const requestId = `file:${this.entry.record.id}:line:${line}`;
    this.inspector.offer(
      this.entry.account,
      1,
      () =>
        rejectedEntry(
          { requestId, route: `${this.route} line ${line}`, kind: this.kind(), status: REJECTED_STATUS },
          raw.replace(/\r?\n$/, ''),
          { invalids: problems.map((p) => ({ field: p.field, reason: p.reason })) },
        ),
      () => ({ requestId, index: 0 }),
    );
  }

  /** The whole file refused (its name, its header, or more than 1% invalid): nothing of it is loaded. */
  rejected(reason: string, records: ActivityEntry['record']['records']): void {
    if (!this.inspector) return;
    const requestId = `file:${this.entry.record.id}`;
    this.inspector.offer(this.entry.account, 1, () =>
      rejectedEntry(
        { requestId, route: this.route, kind: this.kind(), status: REJECTED_STATUS },
        { file: this.entry.record.name, size: this.entry.record.size, records },
        { message: `file rejected: ${reason}` },
      ),
    );
  }

  private kind(): string {
    return `bulk ${this.entry.record.data_type ?? 'file'}`;
  }
}
