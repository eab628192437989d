import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalDirBuckets } from '@cdp/buckets/local';
import type { EventBus } from '@cdp/bus';
import { LocalLogEventBus } from '@cdp/bus/local-log';
import { createLogger } from '@cdp/logger';
import { FileMetadataStore } from '@cdp/metadata/file';
import { ActivityLog, type ActivityRecord } from './activity.js';
import { BulkLoader } from './bulk-loader.js';
import { eventually } from '../../../test/support/eventually.js';

/**
 * spec "Bulk file ingestion": a file still being written is not read until it is complete. A local
 * file is complete when two looks a poll apart find it the same; each look here is one `tick`.
 */
describe('BulkLoader', () => {
  let bus: EventBus;
  let loader: BulkLoader;
  let log: ActivityLog;
  let file: string;
  let incoming: string;
  const published: unknown[] = [];
  const consuming = { on: true };

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-bulk-loader-'));
    const dirs = { incoming: join(dir, 'in'), scratch: join(dir, 'scratch'), export: join(dir, 'export') };
    const metadata = new FileMetadataStore(join(dir, 'meta'));
    bus = await LocalLogEventBus.open(join(dir, 'bus'), { maxPendingBytes: 1 << 26 });
    bus.consume(async (batch) => {
      // A processor that is away: nothing is taken from the bus until it is back.
      while (!consuming.on) await new Promise((r) => setTimeout(r, 20));
      for (const d of batch) published.push(...(d.message as { records: unknown[] }).records);
      return batch.map((delivery) => ({ delivery, outcome: 'ack' as const }));
    });
    loader = new BulkLoader(
      new LocalDirBuckets(dirs),
      bus,
      metadata,
      { byTrackerId: () => Promise.resolve({ id: 'acct' }), customFields: () => Promise.resolve({}) },
      {
        pollMs: 50,
        leaseMs: 30_000,
        recordsPerMessage: 10,
        maxAheadRecords: 30,
        bucketNames: { incoming: 'incoming', scratch: 'scratch' },
        stagingDir: join(dir, 'staging'),
      },
      createLogger('warn'),
    );
    log = new ActivityLog(metadata);
    incoming = join(dirs.incoming, 'trk');
    mkdirSync(incoming, { recursive: true });
    file = join(incoming, 'svc_events_growing.csv');
  });

  afterAll(async () => {
    await loader.stop();
    await bus.close();
  });

  it('leaves it alone while it grows between looks, then loads all of it once', async () => {
    // A client copying the file straight into the directory (not through the bucket's rename).
    writeFileSync(file, 'type,email,page\npageview,a@x.com,/1\n');
    expect(await loader.tick()).toBe(false); // first look
    appendFileSync(file, 'pageview,b@x.com,/2\n');
    expect(await loader.tick()).toBe(false); // it changed since
    appendFileSync(file, 'pageview,c@x.com,/3\n');
    expect(await loader.tick()).toBe(false);
    expect((await log.list('acct', 10)).activity).toEqual([]);
    // The copy is done: the next look finds it as the last one did, and the file is loaded whole.
    expect(await loader.tick()).toBe(true);
    const [entry] = (await log.list('acct', 10)).activity;
    expect(entry).toMatchObject({
      name: 'svc_events_growing.csv',
      state: 'completed',
      records: { read: 3, loaded: 3, invalid: 0 },
    });
    await eventually(() => published.length >= 3);
    expect(published).toHaveLength(3);
    // Looked at again, unchanged, it is not loaded again.
    expect(await loader.tick()).toBe(false);
    expect((await log.list('acct', 10)).activity).toHaveLength(1);
  });

  it('shows a running file with its progress, records and bytes read, while its messages wait for the processor', async () => {
    consuming.on = false;
    const body = `type,email,page\n${Array.from({ length: 200 }, (_, i) => `pageview,p${i}@x.com,/p\n`).join('')}`;
    writeFileSync(join(incoming, 'svc_events_paced.csv'), body);
    loader.start();
    const entry: ActivityRecord = await eventually(async () => {
      const e = (await log.list('acct', 10)).activity.find((r) => r.name === 'svc_events_paced.csv');
      return e?.state === 'running' && e.progress.records === 200 && e;
    }, 20_000);
    // Read whole and checked; publishing waits, 30 records ahead of a processor that takes none.
    expect(await log.get('acct', entry.id)).toMatchObject({
      state: 'running',
      progress: { records: 200, bytes: Buffer.byteLength(body), size: Buffer.byteLength(body) },
    });
    consuming.on = true;
    await eventually(async () => (await log.get('acct', entry.id))?.state === 'completed', 20_000);
    expect(await log.get('acct', entry.id)).toMatchObject({
      state: 'completed',
      records: { read: 200, loaded: 200 },
    });
  });
});
