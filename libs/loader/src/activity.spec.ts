import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '@cdp/contracts';
import type { MetadataStore } from '@cdp/metadata';
import { FileMetadataStore } from '@cdp/metadata/file';
import {
  ACTIVITY_BUCKET,
  ACTIVITY_INDEX_BUCKET,
  ActivityLog,
  activityIndex,
  indexEntriesWithoutSlot,
  type ActivityEntry,
} from './activity.js';

/** An entry as the loader writes it: its slot in the account's index first, then the entry naming it. */
async function drop(metadata: MetadataStore, account: string, name: string, at: number): Promise<string> {
  const id = Buffer.from(`${account}/${name}`).toString('hex').padEnd(32, '0').slice(0, 32);
  const { slot, at: createdAt } = await activityIndex(metadata).append(account, id, at);
  const entry: ActivityEntry = {
    account,
    trackerId: `t-${account}`,
    key: `t-${account}/${name}`,
    attempts: 0,
    published: 0,
    receivedAt: at,
    slot,
    record: {
      id,
      name,
      path: `incoming/t-${account}/${name}`,
      data_type: 'events',
      format: 'csv',
      size: 1,
      state: 'pending',
      records: { read: 0, loaded: 0, invalid: 0, dropped: 0 },
      dropped_fields: [],
      progress: { records: 0, bytes: 0, size: 1 },
      errors: [],
      created_at: new Date(createdAt).toISOString(),
    },
  };
  await metadata.create(ACTIVITY_BUCKET, id, entry);
  return name;
}

describe('ActivityLog paging', () => {
  let metadata: MetadataStore;
  let log: ActivityLog;
  const names = async (account: string, limit: number, cursor?: string) => {
    const page = await log.list(account, limit, cursor);
    return { names: page.activity.map((r) => r.name), next: page.next };
  };

  beforeEach(async () => {
    metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-activity-')));
    log = new ActivityLog(metadata);
    for (let i = 1; i <= 5; i++) await drop(metadata, 'a', `svc_events_${i}.csv`, 1_000 * i);
    await drop(metadata, 'b', 'svc_events_other.csv', 2_500);
  });

  it('answers the first page newest first, with a next only while more is left', async () => {
    expect(await names('a', 2)).toEqual({
      names: ['svc_events_5.csv', 'svc_events_4.csv'],
      next: expect.any(String),
    });
    expect(await names('a', 5)).toEqual({
      names: [
        'svc_events_5.csv',
        'svc_events_4.csv',
        'svc_events_3.csv',
        'svc_events_2.csv',
        'svc_events_1.csv',
      ],
    });
    expect(await names('a', 100)).toEqual(await names('a', 5));
    expect(await names('b', 100)).toEqual({ names: ['svc_events_other.csv'] });
    expect(await names('nobody', 20)).toEqual({ names: [] });
  });

  it('walks every entry once by next, and a cursor of the last page reads nothing more', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let lastCursor: string | undefined;
    do {
      const page = await names('a', 2, cursor);
      seen.push(...page.names);
      lastCursor = cursor;
      cursor = page.next;
    } while (cursor);
    expect(seen).toEqual([
      'svc_events_5.csv',
      'svc_events_4.csv',
      'svc_events_3.csv',
      'svc_events_2.csv',
      'svc_events_1.csv',
    ]);
    // The last page's own cursor gives it again; one made from its oldest entry (past the end) gives nothing.
    expect((await names('a', 2, lastCursor)).names).toEqual(['svc_events_1.csv']);
    const pastTheEnd = Buffer.from('s1').toString('base64url');
    expect(await names('a', 2, pastTheEnd)).toEqual({ names: [] });
  });

  it('refuses a cursor it did not give', async () => {
    await expect(log.list('a', 2, 'not-a-cursor')).rejects.toBeInstanceOf(ApiError);
    await expect(log.list('a', 2, Buffer.from('s0').toString('base64url'))).rejects.toMatchObject({
      status: 400,
    });
  });

  it('keeps created_at newest first and skips a slot whose entry names another slot', async () => {
    // Two loaders raced for one file: the loser's slot stays in the index, the entry names the winner's.
    const entry = (await metadata.get<ActivityEntry>(
      ACTIVITY_BUCKET,
      (await log.list('a', 1)).activity[0]!.id,
    ))!;
    await activityIndex(metadata).append('a', entry.value.record.id, 9_000);
    // A clock behind the previous entry's still lands after it in time.
    await drop(metadata, 'a', 'svc_events_6.csv', 10);
    const all = (await log.list('a', 100)).activity;
    expect(all.map((r) => r.name)).toEqual([
      'svc_events_6.csv',
      'svc_events_5.csv',
      'svc_events_4.csv',
      'svc_events_3.csv',
      'svc_events_2.csv',
      'svc_events_1.csv',
    ]);
    const created = all.map((r) => r.created_at);
    expect(created).toEqual([...created].sort().reverse());
  });
});

describe('entries written before the index', () => {
  it('are indexed once, oldest first, and then listed newest first with the newer ones', async () => {
    const metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-activity-')));
    await drop(metadata, 'a', 'svc_events_1.csv', 1_000);
    await drop(metadata, 'a', 'svc_events_2.csv', 2_000);
    // What the loader wrote before the index: the same entries with no slot.
    for (const entry of await metadata.list<ActivityEntry>(ACTIVITY_BUCKET)) {
      const unslotted: ActivityEntry = { ...entry.value };
      delete unslotted.slot;
      await metadata.update(ACTIVITY_BUCKET, entry.key, unslotted, entry.revision);
    }
    await metadata.delete(ACTIVITY_INDEX_BUCKET, 'a/1');
    await metadata.delete(ACTIVITY_INDEX_BUCKET, 'a/2');
    await metadata.delete(ACTIVITY_INDEX_BUCKET, 'a/head');
    const log = new ActivityLog(metadata);
    expect((await log.list('a', 20)).activity).toEqual([]);

    expect(await indexEntriesWithoutSlot(metadata)).toBe(2);
    await drop(metadata, 'a', 'svc_events_3.csv', 3_000);
    expect((await log.list('a', 20)).activity.map((r) => r.name)).toEqual([
      'svc_events_3.csv',
      'svc_events_2.csv',
      'svc_events_1.csv',
    ]);
    expect(await indexEntriesWithoutSlot(metadata)).toBe(0);
    expect((await log.list('a', 20)).activity).toHaveLength(3);
  });
});
