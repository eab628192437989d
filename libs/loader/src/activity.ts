import { ApiError } from '@cdp/contracts';
import {
  LEAVE_AS_IS,
  NewestFirstIndex,
  updateWithRetry,
  type MetadataStore,
  type Versioned,
} from '@cdp/metadata';
import type { DataType } from './file-names.js';

/** Metadata bucket of the activity log: one entry per file, keyed by the file's id. */
export const ACTIVITY_BUCKET = 'activity';
/** Each account's entries in the order they were created, read newest first a page at a time. */
export const ACTIVITY_INDEX_BUCKET = 'activity-index';

/** The accounts' entries newest first: one sequence per account, so a page costs the page. */
export function activityIndex(metadata: MetadataStore): NewestFirstIndex {
  return new NewestFirstIndex(metadata, ACTIVITY_INDEX_BUCKET);
}

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
  /**
   * The entry's slot in its account's index. Written with the entry, after the slot: a slot whose entry
   * names another slot (two loaders raced to create it) or no entry at all (a loader died between) is skipped.
   */
  slot?: number;
}

/** The activity log of the accounts, as the API reads it. */
export class ActivityLog {
  private readonly index: NewestFirstIndex;

  constructor(private readonly metadata: MetadataStore) {
    this.index = activityIndex(metadata);
  }

  /**
   * An account's entries, newest first, a page at a time (`cursor` from the previous page's `next`):
   * read through the account's index, so a page costs its own reads whatever the account's history.
   */
  async list(
    account: string,
    limit: number,
    cursor?: string,
  ): Promise<{ activity: ActivityRecord[]; next?: string }> {
    const page = await this.index.page(
      account,
      limit,
      cursor ? decodeCursor(cursor) : undefined,
      async (slot, n) => {
        const entry = await this.metadata.get<ActivityEntry>(ACTIVITY_BUCKET, slot.id);
        return entry?.value.account === account && entry.value.slot === n ? entry.value.record : undefined;
      },
    );
    const activity = page.items.map((i) => i.item);
    return page.next === undefined ? { activity } : { activity, next: encodeCursor(page.next) };
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

/**
 * Entries written before the activity index existed name no slot, so no page would show them. At a
 * loader's start each one is appended to its account's index, oldest first, and then updated to name its
 * slot; answers how many were. Two replicas doing this at once append an entry twice at worst: the slot the
 * entry does not name is skipped by every reader, as after a crash between the two writes.
 */
export async function indexEntriesWithoutSlot(metadata: MetadataStore): Promise<number> {
  const index = activityIndex(metadata);
  const unindexed = (await metadata.list<ActivityEntry>(ACTIVITY_BUCKET))
    .filter((e) => e.value.slot === undefined)
    .sort((a, b) => a.value.receivedAt - b.value.receivedAt);
  let indexed = 0;
  for (const entry of unindexed) {
    const created = Date.parse(entry.value.record.created_at);
    const { slot } = await index.append(entry.value.account, entry.key, created || entry.value.receivedAt);
    // A loader may move the entry on meanwhile: name the slot in what it wrote, unless another did.
    const named = await updateWithRetry<ActivityEntry>(metadata, ACTIVITY_BUCKET, entry.key, (current) =>
      current && current.value.slot === undefined ? { ...current.value, slot } : LEAVE_AS_IS,
    );
    if (named) indexed += 1;
  }
  return indexed;
}

/** A page's `next`: the slot the following page reads below, opaque to the caller. */
function encodeCursor(slot: number): string {
  return Buffer.from(`s${slot}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^s([1-9]\d{0,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw ApiError.invalid([{ field: 'cursor', reason: "must be a previous page's next" }]);
  return Number(match[1]);
}
