import { createHash, randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Buckets, ObjectStat } from '@cdp/buckets';
import { BusUnavailableError, type EventBus } from '@cdp/bus';
import type { IngestMessage } from '@cdp/contracts';
import type { CustomFields, CustomIdentifierNames } from '@cdp/domain';
import { FAULT_POINTS_LOADER, faultPoint } from './loader-faults.js';
import { derivedRequestId } from '@cdp/idempotency';
import type { Inspector } from '@cdp/inspector';
import type { Logger } from '@cdp/logger';
import type { Metrics } from '@cdp/metrics';
import {
  Lease,
  MetadataConflictError,
  PollLoop,
  type MetadataStore,
  type NewestFirstIndex,
  type Versioned,
} from '@cdp/metadata';
import {
  ACTIVITY_BUCKET,
  activityIndex,
  MAX_ENTRY_ERRORS,
  type ActivityEntry,
  type ActivityError,
  type ActivityRecord,
} from './activity.js';
import { FileInspection } from './file-inspection.js';
import { fileKind, nameProblem } from './file-names.js';
import { BacklogPace } from './backlog-pace.js';
import { LoadMeter } from './load-meter.js';
import { readFile, UnreadableFileError, type FileItem } from './file-records.js';
import { StagedMessages, type StagedMessage } from './staged-messages.js';
import type { LoadContext, LoadedRecord } from './record-rules.js';

/** How a file's loading ended, as its entry shows it. */
type LoadOutcome = Pick<ActivityRecord, 'state' | 'records' | 'errors' | 'dropped_fields' | 'progress'> &
  Partial<Pick<ActivityRecord, 'rejection_reason' | 'rejected_records_file'>>;

/** What the loader needs of the accounts and their schemas (AccountsService, SchemaRegistry). */
export interface LoaderAccounts {
  byTrackerId(trackerId: string): Promise<{ id: string } | undefined>;
  customFields(account: string, object: 'customers' | 'events' | 'products'): Promise<CustomFields>;
  /** The account's custom identifiers: identifier columns and fields besides the built-in ones. */
  identifiers?(account: string): Promise<CustomIdentifierNames>;
}

export interface BulkLoaderOptions {
  pollMs: number;
  /** A running file whose loader has not renewed its claim this long is taken over by another. */
  leaseMs: number;
  recordsPerMessage: number;
  /** Where a file's checked records wait for the 1% verdict (a local directory; the files have no names). */
  stagingDir: string;
  /**
   * Records the loader lets wait in the bus before publishing more: the embedded bus holds its backlog
   * in memory, so a loader running ahead of the processor would grow the process with the file.
   */
  maxAheadRecords?: number;
  /** How paths are shown in the activity log: the buckets' names. */
  bucketNames: { incoming: string; scratch: string };
  workerId?: string;
  /** Counts files by how they ended, and records and bytes as they are read and published (the process's metrics). */
  metrics?: Metrics;
}

/** How often a running file's progress is written to its entry. */
const PROGRESS_MS = 500;
/** Records let wait in the bus ahead of the processors, unless the options say otherwise. */
const MAX_AHEAD_RECORDS = 20_000;
/** Attempts of a file that fail for a reason outside the file before it is marked failed. */
const MAX_ATTEMPTS = 3;

/** A file found in the incoming bucket: its id (by content), whose it is, and where. */
interface FileSeen {
  id: string;
  account: string;
  trackerId: string;
  key: string;
  name: string;
  stat: ObjectStat;
}

/**
 * The bulk-file loader (spec "Bulk file ingestion"): watches `{incoming_bucket}/<tracker_id>/`, and
 * loads each complete file exactly once through the bus, as the equivalent API calls would.
 *
 * - A file is complete when two looks at it, a poll apart, find the same size and version (a local
 *   file still growing is left alone; S3 lists only completed uploads, and local writes land by rename).
 * - Its id derives from its name, size and content digest, so the same file dropped again is the same
 *   file; its activity entry is created if absent, then claimed by compare-and-set with a lease, so two
 *   loaders never run one file and a dead loader's file is taken over.
 * - The whole file is read and checked first; above 1% invalid it is rejected and nothing is published.
 *   Then it is read again and published in messages whose ids derive from the file's id and their
 *   sequence: a loader taking over skips what was acknowledged and republishes the rest as resends,
 *   which the bus and the store recognise, so nothing is stored twice or lost.
 */
export class BulkLoader {
  readonly id: string;
  private readonly loop: PollLoop;
  /** Size and version of each key at the last look, and of keys already dealt with. */
  private readonly lastSeen = new Map<string, string>();
  private readonly finished = new Map<string, string>();
  private readonly ids = new Map<string, string>();
  private readonly index: NewestFirstIndex;

  constructor(
    private readonly buckets: Buckets,
    private readonly bus: EventBus,
    private readonly metadata: MetadataStore,
    private readonly accounts: LoaderAccounts,
    private readonly options: BulkLoaderOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    /** The event inspector: each record published, refused or rejected is offered to it. */
    private readonly inspector?: Inspector,
  ) {
    this.id = options.workerId ?? randomUUID();
    this.index = activityIndex(metadata);
    this.loop = new PollLoop(() => this.tick(), {
      pollMs: options.pollMs,
      stoppingReason: 'the loader is stopping',
      onError: (err) => this.logger.warn({ err }, 'loader: looking for files failed'),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops; a file in progress is handed back (pending) so another loader, or this one restarted, resumes it. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Looks at the incoming bucket once and loads one file if one is ready; tells whether it did. */
  async tick(): Promise<boolean> {
    // Sizes and versions come with the listing: no request per object on S3.
    const objects = await this.buckets.listObjects('incoming', '');
    this.forgetGone(new Set(objects.map((o) => o.key)));
    for (const stat of objects) {
      if (this.loop.stopping) return false;
      const key = stat.key;
      const parts = key.split('/');
      // Only files directly in an account's prefix are uploads; anything deeper is not ours to read.
      if (parts.length !== 2) continue;
      const version = `${stat.size}:${stat.version}`;
      if (this.finished.get(key) === version) continue;
      if (this.lastSeen.get(key) !== version) {
        this.lastSeen.set(key, version);
        continue;
      }
      const account = await this.accounts.byTrackerId(parts[0]!);
      if (!account) continue;
      const id = await this.fileId(key, version, stat);
      const claimed = await this.claim({
        id,
        account: account.id,
        trackerId: parts[0]!,
        key,
        name: parts[1]!,
        stat,
      });
      if (claimed === 'done') {
        this.finished.set(key, version);
        continue;
      }
      if (!claimed) continue;
      const ended = await this.loop.run((abort) => this.run(claimed, abort));
      if (ended) this.finished.set(key, version);
      return true;
    }
    return false;
  }

  /** What the loader remembers of keys no longer in the bucket is dropped: it stays as small as the bucket. */
  private forgetGone(listed: ReadonlySet<string>): void {
    for (const key of this.lastSeen.keys()) if (!listed.has(key)) this.lastSeen.delete(key);
    for (const key of this.finished.keys()) if (!listed.has(key)) this.finished.delete(key);
    for (const known of this.ids.keys())
      if (!listed.has(known.slice(0, known.lastIndexOf('@')))) this.ids.delete(known);
  }

  /** The file's identity: its key, size and content (S3's ETag, or a SHA-256 of the bytes). */
  private async fileId(key: string, version: string, stat: ObjectStat): Promise<string> {
    const known = this.ids.get(`${key}@${version}`);
    if (known) return known;
    let digest = stat.etag;
    if (!digest) {
      const hash = createHash('sha256');
      for await (const chunk of this.buckets.read('incoming', key)) hash.update(chunk as Buffer);
      digest = hash.digest('hex');
    }
    const id = createHash('sha256')
      .update(`${key}\u0000${stat.size}\u0000${digest}`)
      .digest('hex')
      .slice(0, 32);
    this.ids.set(`${key}@${version}`, id);
    return id;
  }

  private async claim(file: FileSeen): Promise<Versioned<ActivityEntry> | 'done' | undefined> {
    const { id, account } = file;
    const now = this.now();
    let current = await this.metadata.get<ActivityEntry>(ACTIVITY_BUCKET, id);
    if (!current) {
      // The slot first, then the entry naming it: a crash between leaves a slot the log skips, and
      // the file, still without an entry, gets a new slot at the next look.
      const { slot, at } = await this.index.append(account, id, now);
      try {
        const entry = this.newEntry(file, now, slot, at);
        current = { key: id, value: entry, revision: await this.metadata.create(ACTIVITY_BUCKET, id, entry) };
      } catch (err) {
        if (!(err instanceof MetadataConflictError)) throw err;
        current = await this.metadata.get<ActivityEntry>(ACTIVITY_BUCKET, id);
        if (!current) return undefined;
      }
    }
    const { record, heartbeat } = current.value;
    if (record.state === 'completed' || record.state === 'rejected' || record.state === 'failed')
      return 'done';
    if (record.state === 'running' && (heartbeat ?? 0) + this.options.leaseMs >= now) return undefined;
    const value: ActivityEntry = {
      ...current.value,
      owner: this.id,
      heartbeat: now,
      attempts: current.value.attempts + 1,
      record: { ...record, state: 'running', started_at: record.started_at ?? new Date(now).toISOString() },
    };
    try {
      const revision = await this.metadata.update(ACTIVITY_BUCKET, id, value, current.revision);
      if (record.state === 'running') {
        this.logger.warn(
          { file: id, previous: current.value.owner },
          'loader: taking over a file whose loader went silent',
        );
      }
      return { key: id, value, revision };
    } catch (err) {
      if (err instanceof MetadataConflictError) return undefined;
      throw err;
    }
  }

  private newEntry(
    { id, account, trackerId, key, name, stat }: FileSeen,
    now: number,
    slot: number,
    /** When the entry was created, as its slot in the account's index says (never before the previous one's). */
    createdAt: number,
  ): ActivityEntry {
    const kind = fileKind(name);
    return {
      account,
      trackerId,
      key,
      attempts: 0,
      published: 0,
      receivedAt: now,
      slot,
      record: {
        id,
        name,
        path: `${this.options.bucketNames.incoming}/${key}`,
        data_type: kind?.dataType ?? null,
        format: kind?.format ?? null,
        size: stat.size,
        state: 'pending',
        records: { read: 0, loaded: 0, invalid: 0, dropped: 0 },
        dropped_fields: [],
        progress: { records: 0, bytes: 0, size: stat.size },
        errors: [],
        created_at: new Date(createdAt).toISOString(),
      },
    };
  }

  /** Loads a claimed file; tells whether it ended (completed, rejected, failed) rather than being handed back. */
  private async run(claimed: Versioned<ActivityEntry>, abort: AbortController): Promise<boolean> {
    const lease = new Lease(this.metadata, ACTIVITY_BUCKET, claimed, abort, {
      leaseMs: this.options.leaseMs,
      now: this.now,
      lostReason: 'lost the file to another loader',
    });
    const write = (change: (entry: ActivityEntry) => ActivityEntry): Promise<void> => lease.write(change);
    const entry = claimed.value;
    const log = { file: entry.record.id, account: entry.account, name: entry.record.name, loader: this.id };
    this.logger.info(log, 'loader: file started');
    const metrics = this.options.metrics;
    metrics?.bulkFilesRunning.inc();
    // How this attempt ended, for the metrics: a final state, or interrupted (the file is left to a later one).
    let ended: 'completed' | 'rejected' | 'failed' | 'interrupted' = 'interrupted';
    try {
      const inspection = new FileInspection(this.inspector, entry);
      const meter = new LoadMeter(metrics, entry.record.data_type);
      const outcome = await this.load(entry, write, abort.signal, inspection, meter);
      lease.stopRenewing();
      if (outcome.state === 'rejected') inspection.rejected(outcome.rejection_reason ?? '', outcome.records);
      await write((e) => ({
        ...e,
        owner: undefined,
        record: {
          ...e.record,
          ...outcome,
          completed_at: new Date(this.now()).toISOString(),
          duration_ms: this.now() - Date.parse(e.record.started_at ?? e.record.created_at),
        },
      }));
      this.logger.info({ ...log, state: outcome.state, records: outcome.records }, 'loader: file finished');
      if (outcome.state !== 'running' && outcome.state !== 'pending') ended = outcome.state;
      return true;
    } catch (err) {
      lease.stopRenewing();
      if (abort.signal.aborted) {
        if (this.loop.stopping) {
          await write((e) => ({ ...e, owner: undefined, record: { ...e.record, state: 'pending' } })).catch(
            () => undefined,
          );
        }
        this.logger.warn({ ...log, reason: String(abort.signal.reason) }, 'loader: file interrupted');
        return false;
      }
      const reason = err instanceof Error ? err.message : String(err);
      const final = lease.latest.value.attempts >= MAX_ATTEMPTS;
      this.logger.error({ ...log, err, final }, 'loader: file failed');
      await write((e) => ({
        ...e,
        owner: undefined,
        record: final
          ? {
              ...e.record,
              state: 'failed',
              rejection_reason: reason,
              completed_at: new Date(this.now()).toISOString(),
            }
          : { ...e.record, state: 'pending' },
      })).catch(() => undefined);
      if (final) ended = 'failed';
      return final;
    } finally {
      metrics?.bulkFilesRunning.dec();
      metrics?.bulkFiles.inc({ state: ended });
    }
  }

  private async context(entry: ActivityEntry): Promise<LoadContext> {
    const [customers, events, products, identifiers] = await Promise.all([
      this.accounts.customFields(entry.account, 'customers'),
      this.accounts.customFields(entry.account, 'events'),
      this.accounts.customFields(entry.account, 'products'),
      this.accounts.identifiers?.(entry.account),
    ]);
    return { nowMs: entry.receivedAt, customers, events, products, ...(identifiers ? { identifiers } : {}) };
  }

  private async load(
    entry: ActivityEntry,
    write: (change: (entry: ActivityEntry) => ActivityEntry) => Promise<void>,
    signal: AbortSignal,
    inspection: FileInspection,
    meter: LoadMeter,
  ): Promise<LoadOutcome> {
    const name = entry.record.name;
    const problem = nameProblem(name);
    const kind = fileKind(name);
    const none = { read: 0, loaded: 0, invalid: 0, dropped: 0 };
    const progress = { records: 0, bytes: 0, size: entry.record.size };
    if (problem || !kind) {
      return {
        state: 'rejected',
        records: none,
        errors: [],
        dropped_fields: [],
        progress,
        rejection_reason: `the file name ${problem}`,
      };
    }
    const context = await this.context(entry);
    const staged = await StagedMessages.create(this.options.stagingDir, `${entry.record.id}-${this.id}`);
    try {
      const read = await this.readOnce(entry, kind, context, write, signal, inspection, staged, meter);
      if ('state' in read) return read;
      const { counts, errors, dropped_fields, progress: finalProgress, rejectedFile } = read;
      // "More than 1% of the data is invalid": 1.0% still loads.
      if (counts.invalid * 100 > counts.read) {
        const share = Math.floor((counts.invalid * 1000) / counts.read) / 10;
        return {
          state: 'rejected',
          records: { ...counts, loaded: 0 },
          errors,
          dropped_fields,
          progress: finalProgress,
          rejection_reason: `${share.toFixed(1)}% invalid, above 1%`,
          ...rejectedFile,
        };
      }
      // The whole file is read: its entry says so while the messages go out (GET /v3/activity/{id}).
      await write((e) => ({ ...e, record: { ...e.record, progress: finalProgress } }));
      await this.publish(entry, staged, write, signal, inspection, meter);
      return {
        state: 'completed',
        records: counts,
        errors,
        dropped_fields,
        progress: finalProgress,
        ...rejectedFile,
      };
    } finally {
      await staged.close();
    }
  }

  /**
   * The one reading of the file: every record checked; invalid ones written to the rejected-records
   * file, valid ones grouped into bus messages (numbered from the start of the file) and staged.
   * Answers the counts, or the file's rejection when it cannot be read at all.
   */
  private async readOnce(
    entry: ActivityEntry,
    kind: NonNullable<ReturnType<typeof fileKind>>,
    context: LoadContext,
    write: (change: (entry: ActivityEntry) => ActivityEntry) => Promise<void>,
    signal: AbortSignal,
    inspection: FileInspection,
    staged: StagedMessages,
    meter: LoadMeter,
  ): Promise<
    | LoadOutcome
    | {
        counts: ActivityRecord['records'];
        errors: ActivityError[];
        dropped_fields: string[];
        progress: ActivityRecord['progress'];
        rejectedFile: { rejected_records_file?: string };
      }
  > {
    const counts = { read: 0, loaded: 0, invalid: 0, dropped: 0 };
    const errors: ActivityError[] = [];
    let rejected: { stream: PassThrough; done: Promise<void>; key: string } | undefined;
    let lastProgress = this.now();
    const buffers = new Map<LoadedRecord['kind'], StagedMessage>();
    const stage = async (recordKind: LoadedRecord['kind']): Promise<void> => {
      const buffer = buffers.get(recordKind);
      if (!buffer) return;
      buffers.delete(recordKind);
      await staged.append(buffer);
    };
    const reading = readFile(this.buckets.read('incoming', entry.key), kind, context);
    try {
      for await (const item of reading.items) {
        if (signal.aborted) throw signal.reason;
        counts.read += item.lines;
        if (Array.isArray(item.result)) {
          counts.invalid += item.lines;
          inspection.invalid(item.line, item.raw, item.result);
          for (const p of item.result)
            if (errors.length < MAX_ENTRY_ERRORS) errors.push({ line: item.line, ...p });
          rejected ??= this.rejectedFile(entry);
          if (
            !rejected.stream.write(
              `${JSON.stringify({ line: item.line, errors: item.result, record: item.raw })}\n`,
            )
          ) {
            await new Promise((r) => rejected!.stream.once('drain', r));
          }
        } else {
          if (item.dropped) counts.dropped += item.lines;
          const recordKind = item.result.kind;
          let buffer = buffers.get(recordKind);
          if (!buffer) buffers.set(recordKind, (buffer = { kind: recordKind, records: [], lines: 0 }));
          buffer.records.push(item.result.record);
          buffer.lines += item.lines;
          counts.loaded += item.lines;
          if (buffer.records.length >= this.options.recordsPerMessage) await stage(recordKind);
        }
        if (this.now() - lastProgress >= PROGRESS_MS) {
          lastProgress = this.now();
          const records = counts.read;
          const bytes = reading.bytes();
          meter.read(counts, bytes);
          void write((e) => ({
            ...e,
            record: { ...e.record, progress: { records, bytes, size: e.record.size } },
          })).catch(() => undefined);
        }
      }
      for (const recordKind of [...buffers.keys()]) await stage(recordKind);
    } catch (err) {
      rejected?.stream.destroy();
      await rejected?.done.catch(() => undefined);
      if (err instanceof UnreadableFileError) {
        return {
          state: 'rejected',
          records: { ...counts, loaded: 0 },
          errors,
          dropped_fields: [],
          progress: { records: 0, bytes: 0, size: entry.record.size },
          rejection_reason: err.message,
        };
      }
      throw err;
    } finally {
      meter.read(counts, reading.bytes());
    }
    rejected?.stream.end();
    await rejected?.done;
    return {
      counts,
      errors,
      dropped_fields: [...reading.dropped].sort().slice(0, MAX_ENTRY_ERRORS),
      progress: { records: counts.read, bytes: reading.bytes(), size: entry.record.size },
      rejectedFile: rejected
        ? { rejected_records_file: `${this.options.bucketNames.scratch}/${rejected.key}` }
        : {},
    };
  }

  private rejectedFile(entry: ActivityEntry): { stream: PassThrough; done: Promise<void>; key: string } {
    const key = `${entry.trackerId}/activity/${entry.record.id}/rejected-records.jsonl`;
    const stream = new PassThrough();
    return { stream, key, done: this.buckets.write('scratch', key, stream) };
  }

  /**
   * Publishes the staged messages in order, each with an id derived from the file's id and its
   * sequence: a loader taking over skips those acknowledged and republishes the rest as resends.
   */
  private async publish(
    entry: ActivityEntry,
    staged: StagedMessages,
    write: (change: (entry: ActivityEntry) => ActivityEntry) => Promise<void>,
    signal: AbortSignal,
    inspection: FileInspection,
    meter: LoadMeter,
  ): Promise<void> {
    let sequence = entry.published;
    // Written with `published` in one change: what the messages skipped carried.
    let loaded = entry.record.records.loaded;
    let lastProgress = this.now();
    const resend = entry.attempts > 1;
    const pace = new BacklogPace(
      this.bus,
      this.options.maxAheadRecords ?? MAX_AHEAD_RECORDS,
      this.options.recordsPerMessage,
    );
    for await (const staging of staged.messages(entry.published)) {
      if (signal.aborted) throw signal.reason;
      const seq = sequence++;
      const message = {
        id: derivedRequestId(entry.account, `file:${entry.record.id}`, String(seq)),
        account: entry.account,
        kind: staging.kind,
        receivedAt: entry.receivedAt,
        records: staging.records,
        ...(resend ? { resend: true as const } : {}),
      } as IngestMessage;
      faultPoint(FAULT_POINTS_LOADER.publish, entry.record.name);
      await pace.wait(signal);
      await this.publishDurably(message, signal);
      inspection.published(message.id, staging.kind, staging.records);
      meter.loaded(staging.lines);
      loaded += staging.lines;
      if (this.now() - lastProgress >= PROGRESS_MS) {
        lastProgress = this.now();
        const done = seq + 1;
        const records = loaded;
        void write((e) => ({
          ...e,
          published: Math.max(e.published, done),
          record: { ...e.record, records: { ...e.record.records, loaded: records } },
        })).catch(() => undefined);
      }
    }
  }

  private async publishDurably(message: IngestMessage, signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        await this.bus.publish(message);
        return;
      } catch (err) {
        if (!(err instanceof BusUnavailableError) || signal.aborted) throw err;
        // The bus is full or away: wait, as an API client told 503 would.
        await new Promise((r) => setTimeout(r, err.retryAfterSeconds * 1000));
      }
    }
  }
}

export type { FileItem };
