import type { MetadataStore, Versioned } from '@cdp/metadata';
import type { DataType } from './file-names.js';

/** Metadata bucket of the activity log: one entry per file, keyed by the file's id. */
export const ACTIVITY_BUCKET = 'activity';

export type ActivityState = 'pending' | 'running' | 'completed' | 'rejected' | 'failed';

/** At most this many record errors are kept in an entry; every one is in the rejected-records file. */
export const MAX_ENTRY_ERRORS = 100;

/** Above this share of invalid records the whole file is rejected (spec "Bulk file ingestion"). */
export const MAX_INVALID_SHARE = 0.01;

export interface ActivityError {
  line: number;
  field: string;
  reason: string;
}

/** What `GET /v3/activity/{id}` shows of a file. */
export interface ActivityRecord {
  id: string;
  /** The file's name within the account's incoming prefix. */
  name: string;
  /** `<incoming bucket>/<tracker_id>/<name>`. */
  path: string;
  data_type: DataType | null;
  format: 'csv' | 'jsonl' | null;
  size: number;
  state: ActivityState;
  records: { read: number; loaded: number; invalid: number; dropped: number };
  /** Columns or fields of no meaning for the data type, dropped from every record. */
  dropped_fields: string[];
  /** While the file runs: what has been read of it. */
  progress: { records: number; bytes: number; size: number };
  errors: ActivityError[];
  rejection_reason?: string;
  /** `<scratch bucket>/<tracker_id>/activity/<id>/rejected-records.jsonl`: every invalid record with its reasons. */
  rejected_records_file?: string;
  created_at: string;
  started_at?: string;
  completed_at?: string;
  duration_ms?: number;
}

/** The stored entry: the record, and what the loaders need to share the work. */
export interface ActivityEntry {
  account: string;
  trackerId: string;
  /** The object's key in the incoming bucket. */
  key: string;
  record: ActivityRecord;
  /** The loader holding the file, and when it last said so (a lease). */
  owner?: string;
  heartbeat?: number;
  attempts: number;
  /** Bus messages of the file published and acknowledged: a loader taking over starts after them. */
  published: number;
  /** The file's reading context, fixed when the file was first seen: every attempt reads it the same way. */
  receivedAt: number;
}

/** The activity log of the accounts, as the API reads it. */
export class ActivityLog {
  constructor(private readonly metadata: MetadataStore) {}

  /** An account's entries, newest first, a page at a time (`cursor` from the previous page's `next`). */
  async list(
    account: string,
    limit: number,
    cursor?: string,
  ): Promise<{ activity: ActivityRecord[]; next?: string }> {
    const all = (await this.metadata.list<ActivityEntry>(ACTIVITY_BUCKET))
      .filter((e) => e.value.account === account)
      .map((e) => e.value.record)
      .sort(newestFirst);
    const after = cursor ? decodeCursor(cursor) : undefined;
    const start = after ? all.findIndex((r) => newestFirst(r, after) > 0) : 0;
    const page = start < 0 ? [] : all.slice(start, start + limit);
    const last = page.at(-1);
    const more = start >= 0 && start + limit < all.length;
    return more && last ? { activity: page, next: encodeCursor(last) } : { activity: page };
  }

  async get(account: string, id: string): Promise<ActivityRecord | undefined> {
    if (!/^[0-9a-f]{32}$/.test(id)) return undefined;
    const entry: Versioned<ActivityEntry> | undefined = await this.metadata.get<ActivityEntry>(
      ACTIVITY_BUCKET,
      id,
    );
    return entry?.value.account === account ? entry.value.record : undefined;
  }
}

function newestFirst(
  a: Pick<ActivityRecord, 'created_at' | 'id'>,
  b: Pick<ActivityRecord, 'created_at' | 'id'>,
): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

function encodeCursor(r: ActivityRecord): string {
  return Buffer.from(`${r.created_at}|${r.id}`).toString('base64url');
}

function decodeCursor(cursor: string): Pick<ActivityRecord, 'created_at' | 'id'> | undefined {
  const [created_at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  return created_at && id ? { created_at, id } : undefined;
}
