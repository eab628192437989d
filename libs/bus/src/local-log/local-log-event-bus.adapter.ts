import { mkdirSync, openSync, fsyncSync, closeSync } from 'node:fs';
import {
  appendFile,
  open,
  readdir,
  readFile,
  rename,
  rm,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import { join } from 'node:path';
import type { DriverHealth, IngestMessage } from '@cdp/contracts';
import type { BusBacklog } from '@cdp/metrics';
import { FAULT_POINTS, faultPoint } from '@cdp/faults';
import {
  BusUnavailableError,
  decodeMessage,
  EventBus,
  type EncodedMessage,
  encodedMessageJson,
  type BatchConsumer,
  type DeadLetter,
  type DeadLetterPage,
  type DeadLetterObserver,
  type DeadLetterQuery,
  type Delivery,
  type Settlement,
} from '../event-bus.port.js';
import { DEFAULT_RETRY, RetryPolicy, type RetryOptions } from '../retry-policy.js';

export interface LocalLogOptions {
  /** Bytes of accepted but unprocessed messages beyond which publish refuses (the API answers 503). */
  maxPendingBytes: number;
  /** A segment file is closed for writing past this size and deleted once all its messages are settled. */
  segmentBytes?: number;
  /**
   * At most this many records go to the consumer in one batch (whole messages only; default
   * LOCAL_MAX_BATCH_RECORDS). A batch takes what is pending, so it is this large only under load.
   */
  maxBatchRecords?: number;
  /**
   * Failures of one message while others are being stored before it goes to the dead-letter file
   * (retry-policy.ts: failures while the store is away do not count).
   */
  maxDeliveries?: number;
  /** Backoff of retried messages (defaults: DEFAULT_RETRY). */
  retryBaseMs?: number;
  retryCapMs?: number;
  onDeadLetter?: DeadLetterObserver;
}

/** A line of dead-letter.log. */
interface DeadLetterLine {
  seq: number;
  reason: string;
  deliveries: number;
  at: string;
  firstFailedAt?: string;
  message: IngestMessage;
}

interface Entry {
  seq: number;
  /**
   * The message; for a message published encoded, its head and records' JSON until it is delivered
   * (records parsed once, then: a queue of text is also cheaper for the garbage collector to keep).
   */
  message: IngestMessage | EncodedMessage;
  account: string;
  records: number;
  bytes: number;
  deliveryCount: number;
  /** A retried message waits out its backoff in its place: it is not delivered before this moment. */
  retryAt?: number;
}

function entryOf(seq: number, message: IngestMessage, bytes: number, deliveryCount: number): Entry {
  return { seq, message, account: message.account, records: message.records.length, bytes, deliveryCount };
}

/** The entry's message, decoded on first use. */
function messageOf(entry: Entry): IngestMessage {
  if ('recordsJson' in entry.message) entry.message = decodeMessage(entry.message);
  return entry.message;
}

interface Segment {
  firstSeq: number;
  file: string;
  live: number;
  sealed: boolean;
}

const SEGMENT_PREFIX = 'segment-';
const DEAD_LETTER_FILE = 'dead-letter.log';

/**
 * The default batch under load. chDB's cost per row falls with the insert's size (one part per insert
 * per table, and the merges after: ~8.9 µs a row at 10,000 rows, ~6.8 at 50,000, store-baseline.ts), so
 * larger batches are cheaper: 40,000 cut the embedded process's CPU per event by ~7%, but for ~50 MB more
 * peak RSS under the full-speed ingest benchmark, which took it past the 1 GB budget (docs/benchmarks.md,
 * issue 35). Kept at 10,000 until a batch's rows cost less memory (store-ready rows from the codec).
 */
export const LOCAL_MAX_BATCH_RECORDS = 10_000;

/**
 * The embedded bus: an append-only log in the data directory, written with group commit (many
 * concurrent publishes share one fdatasync), delivered from memory, settled by appending sequence
 * numbers to an acks file. At start, every logged message without an ack is delivered again.
 */
export class LocalLogEventBus extends EventBus {
  private readonly segmentBytes: number;
  private readonly maxBatchRecords: number;
  private readonly retry: RetryPolicy;
  /** Pending messages waiting out a retry's backoff (`Entry.retryAt`). */
  private retrying = 0;
  /** The consumer waits until then: several messages failed with nothing stored. */
  private pausedUntil = 0;
  /** Dead letters by id (the message stays in the file until replayed). */
  private readonly dead = new Map<string, DeadLetter>();
  private deadFileOps: Promise<unknown> = Promise.resolve();
  private readonly segments: Segment[] = [];
  private active: { segment: Segment; handle: FileHandle; size: number } | undefined;
  private nextSeq = 1;
  private pending: Entry[] = [];
  private pendingBytes = 0;
  private inFlight = new Map<number, Entry>();
  private writeQueue: { line: string; entry: Entry; done: (err?: Error) => void }[] = [];
  private writing: Promise<void> | undefined;
  private consumer: BatchConsumer | undefined;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private stopping = false;
  private closed = false;

  private constructor(
    private readonly dir: string,
    private readonly options: LocalLogOptions,
  ) {
    super();
    this.segmentBytes = options.segmentBytes ?? 64 * 1024 * 1024;
    this.maxBatchRecords = options.maxBatchRecords ?? LOCAL_MAX_BATCH_RECORDS;
    this.retry = new RetryPolicy({
      maxStrikes: options.maxDeliveries ?? DEFAULT_RETRY.maxStrikes,
      baseMs: options.retryBaseMs ?? DEFAULT_RETRY.baseMs,
      capMs: options.retryCapMs ?? DEFAULT_RETRY.capMs,
    } satisfies RetryOptions);
  }

  static async open(dir: string, options: LocalLogOptions): Promise<LocalLogEventBus> {
    const bus = new LocalLogEventBus(dir, options);
    await bus.recover();
    return bus;
  }

  private get acksFile(): string {
    return join(this.dir, 'acks.log');
  }

  /** Reads the log back: every message without an ack becomes pending again, as a redelivery. */
  private async recover(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    const acked = new Set<number>();
    const acksText = await readFile(this.acksFile, 'utf8').catch(() => '');
    for (const line of acksText.split('\n')) {
      for (const seq of line.split(',')) if (seq) acked.add(Number(seq));
    }
    const files = (await readdir(this.dir)).filter((f) => f.startsWith(SEGMENT_PREFIX)).sort();
    for (const file of files) {
      const segment: Segment = {
        firstSeq: Number(file.slice(SEGMENT_PREFIX.length, -4)),
        file,
        live: 0,
        sealed: true,
      };
      const text = await readFile(join(this.dir, file), 'utf8');
      // A line without its newline is a write torn by a crash; it was never acknowledged to anyone.
      const lines = text.split('\n').slice(0, -1);
      for (const line of lines) {
        let parsed: { seq: number; message: IngestMessage };
        try {
          parsed = JSON.parse(line) as { seq: number; message: IngestMessage };
        } catch {
          continue;
        }
        this.nextSeq = Math.max(this.nextSeq, parsed.seq + 1);
        if (acked.has(parsed.seq)) continue;
        segment.live++;
        // It may have been partly stored before the stop: deliver it as a redelivery.
        this.enqueue(entryOf(parsed.seq, parsed.message, line.length + 1, 2));
      }
      if (segment.live === 0) await rm(join(this.dir, file), { force: true });
      else this.segments.push(segment);
    }
    // Keep only the acks that still matter: those of messages in segments that are still there. An ack
    // at or past nextSeq names a message whose segment is gone (settled and deleted): sequence numbers
    // restart after it, so keeping that ack would mark a new, unprocessed message as done.
    const firstLive = this.segments[0]?.firstSeq ?? this.nextSeq;
    const kept = [...acked].filter((s) => s >= firstLive && s < this.nextSeq);
    await writeFile(`${this.acksFile}.tmp`, kept.length ? `${kept.join(',')}\n` : '');
    await rename(`${this.acksFile}.tmp`, this.acksFile);
    syncDirectory(this.dir);
    for (const line of await this.readDeadLetters()) this.dead.set(String(line.seq), view(line));
  }

  private async readDeadLetters(): Promise<DeadLetterLine[]> {
    const text = await readFile(join(this.dir, DEAD_LETTER_FILE), 'utf8').catch(() => '');
    const lines: DeadLetterLine[] = [];
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        lines.push(JSON.parse(line) as DeadLetterLine);
      } catch {
        // a line torn by a crash: its message was not acknowledged yet and is delivered again
      }
    }
    return lines;
  }

  private enqueue(entry: Entry): void {
    this.pending.push(entry);
    this.pendingBytes += entry.bytes;
    this.wake?.();
  }

  publish(message: IngestMessage): Promise<void> {
    return this.append((seq) => {
      const line = `${JSON.stringify({ seq, message })}\n`;
      return { line, entry: entryOf(seq, message, line.length, 1) };
    });
  }

  /** The line is the one publish writes, its records' JSON spliced in as it came. */
  override publishEncoded(message: EncodedMessage): Promise<void> {
    return this.append((seq) => {
      const line = `{"seq":${seq},"message":${encodedMessageJson(message)}}\n`;
      const entry: Entry = {
        seq,
        message,
        account: message.head.account,
        records: message.count,
        bytes: line.length,
        deliveryCount: 1,
      };
      return { line, entry };
    });
  }

  private async append(lineOf: (seq: number) => { line: string; entry: Entry }): Promise<void> {
    if (this.closed) throw new BusUnavailableError('the bus is shutting down', 5);
    const seq = this.nextSeq;
    const { line, entry } = lineOf(seq);
    // An empty queue takes any message; otherwise the processor is behind and the client must wait.
    if (this.pendingBytes > 0 && this.pendingBytes + line.length > this.options.maxPendingBytes) {
      throw new BusUnavailableError('the processor is behind; the bus is full', 1);
    }
    this.nextSeq++;
    await new Promise<void>((resolve, reject) => {
      this.writeQueue.push({ line, entry, done: (err) => (err ? reject(err) : resolve()) });
      this.writing ??= this.flush();
    });
  }

  /** Group commit: writes everything queued so far in one write and one fdatasync, then repeats. */
  private async flush(): Promise<void> {
    try {
      while (this.writeQueue.length) {
        const batch = this.writeQueue;
        this.writeQueue = [];
        try {
          const target = await this.activeSegment(batch[0]!.entry.seq);
          const data = batch.map((w) => w.line).join('');
          await target.handle.write(data);
          await target.handle.datasync();
          target.size += Buffer.byteLength(data);
          target.segment.live += batch.length;
          for (const w of batch) {
            this.enqueue(w.entry);
            w.done();
          }
        } catch (err) {
          for (const w of batch)
            w.done(new BusUnavailableError(`the bus log could not be written: ${String(err)}`));
        }
      }
    } finally {
      this.writing = undefined;
    }
  }

  /** The segment to append to; a new one starts with the first sequence number it will hold. */
  private async activeSegment(
    firstSeq: number,
  ): Promise<{ segment: Segment; handle: FileHandle; size: number }> {
    if (this.active && this.active.size < this.segmentBytes) return this.active;
    if (this.active) {
      this.active.segment.sealed = true;
      await this.active.handle.close();
      await this.dropIfSettled(this.active.segment);
    }
    const file = `${SEGMENT_PREFIX}${String(firstSeq).padStart(16, '0')}.log`;
    const handle = await open(join(this.dir, file), 'a');
    syncDirectory(this.dir); // the new file's name must survive a crash as well as its bytes
    const segment: Segment = { firstSeq, file, live: 0, sealed: false };
    this.segments.push(segment);
    this.active = { segment, handle, size: 0 };
    return this.active;
  }

  consume(consumer: BatchConsumer): void {
    if (this.consumer) throw new Error('the local log bus has one consumer');
    this.consumer = consumer;
    this.stopping = false;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      const batch = Date.now() < this.pausedUntil ? [] : this.takeBatch();
      if (batch.length === 0) {
        // Nothing deliverable: wait for a publish, the end of a pause or of a message's backoff.
        const next = Math.max(this.pausedUntil, this.nextRetry() ?? 0);
        await this.idle(this.pending.length && next ? Math.max(next - Date.now(), 5) : undefined);
        continue;
      }
      const token = this.retry.attempt();
      const deliveries: Delivery[] = batch.map((e) => ({
        handle: String(e.seq),
        message: messageOf(e),
        deliveryCount: e.deliveryCount,
        sequence: e.seq,
      }));
      let settlements: Settlement[];
      try {
        settlements = await this.consumer!(deliveries);
      } catch (err) {
        settlements = deliveries.map((delivery) => ({ delivery, outcome: 'retry', reason: String(err) }));
      }
      await this.settle(settlements, token);
    }
  }

  private async idle(ms: number | undefined): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      if (ms !== undefined) timer = setTimeout(resolve, ms);
    });
    clearTimeout(timer);
    this.wake = undefined;
  }

  private takeBatch(): Entry[] {
    if (this.retrying) return this.takeAroundRetries();
    const batch: Entry[] = [];
    let records = 0;
    while (this.pending.length) {
      const next = this.pending[0]!;
      const size = next.records;
      if (batch.length && records + size > this.maxBatchRecords) break;
      this.pending.shift();
      this.pendingBytes -= next.bytes;
      this.inFlight.set(next.seq, next);
      batch.push(next);
      records += size;
    }
    return batch;
  }

  /**
   * The slow path while messages wait out a retry's backoff: skips those, keeps the rest in order. Only
   * the failed message waits; its account's later messages go (the version guards keep the state in
   * acceptance order, docs/architecture.md).
   */
  private takeAroundRetries(): Entry[] {
    const now = Date.now();
    const batch: Entry[] = [];
    const rest: Entry[] = [];
    let records = 0;
    let full = false;
    for (const next of this.pending) {
      const size = next.records;
      if (full || (next.retryAt !== undefined && next.retryAt > now)) {
        rest.push(next);
        continue;
      }
      if (batch.length && records + size > this.maxBatchRecords) {
        full = true;
        rest.push(next);
        continue;
      }
      if (next.retryAt !== undefined) {
        delete next.retryAt;
        this.retrying--;
      }
      this.pendingBytes -= next.bytes;
      this.inFlight.set(next.seq, next);
      batch.push(next);
      records += size;
    }
    this.pending = rest;
    return batch;
  }

  /** The soonest moment a message waiting out its backoff may go again (undefined: none waits). */
  private nextRetry(): number | undefined {
    if (!this.retrying) return undefined;
    let soonest: number | undefined;
    for (const e of this.pending)
      if (e.retryAt !== undefined) soonest = soonest === undefined ? e.retryAt : Math.min(soonest, e.retryAt);
    return soonest;
  }

  /**
   * Acks and dead letters are final; a retried message goes back into the queue in its place and waits
   * out its backoff there (retry-policy.ts has the rule).
   */
  private async settle(settlements: Settlement[], token: number): Promise<void> {
    const done: number[] = [];
    const retried: { s: Settlement & { outcome: 'retry' }; entry: Entry }[] = [];
    const acked: string[] = [];
    for (const s of settlements) {
      const entry = this.inFlight.get(Number(s.delivery.handle));
      if (!entry) continue;
      if (s.outcome === 'retry') retried.push({ s, entry });
      else if (s.outcome === 'ack') acked.push(String(entry.seq));
    }
    const { decisions, pauseMs } = this.retry.settled(
      token,
      acked,
      retried.map(({ entry }) => ({ key: String(entry.seq), account: entry.account })),
    );
    const now = Date.now();
    const retries: Entry[] = [];
    for (const s of settlements) {
      const seq = Number(s.delivery.handle);
      const entry = this.inFlight.get(seq);
      if (!entry) continue;
      this.inFlight.delete(seq);
      const decision = decisions.get(String(seq));
      if (s.outcome === 'retry' && decision && !decision.deadLetter) {
        retries.push({ ...entry, deliveryCount: entry.deliveryCount + 1, retryAt: now + decision.delayMs });
        continue;
      }
      if (s.outcome !== 'ack') {
        const firstFailedAt = decision?.firstFailedAt ?? this.retry.firstFailedAt(String(seq));
        this.retry.forget(String(seq));
        const message = messageOf(entry);
        await this.writeDeadLetter({
          seq,
          reason: s.reason,
          deliveries: entry.deliveryCount,
          at: new Date().toISOString(),
          firstFailedAt: new Date(firstFailedAt).toISOString(),
          message,
        });
        this.options.onDeadLetter?.(message.kind, message.records.length);
      }
      done.push(seq);
    }
    if (done.length) {
      faultPoint(FAULT_POINTS.busAck);
      await appendFile(this.acksFile, `${done.join(',')}\n`);
      for (const seq of done) await this.release(seq);
    }
    if (retries.length) {
      for (const entry of retries) insertBySeq(this.pending, entry);
      this.retrying += retries.length;
      this.pendingBytes += retries.reduce((n, e) => n + e.bytes, 0);
    }
    if (pauseMs) this.pausedUntil = Date.now() + pauseMs;
  }

  private writeDeadLetter(line: DeadLetterLine): Promise<void> {
    return this.deadFileOp(async () => {
      await appendFile(join(this.dir, DEAD_LETTER_FILE), `${JSON.stringify(line)}\n`);
      this.dead.set(String(line.seq), view(line));
    });
  }

  /** Dead-letter file operations one at a time: a replay rewrites the file. */
  private deadFileOp<T>(op: () => Promise<T>): Promise<T> {
    const run = this.deadFileOps.then(op);
    this.deadFileOps = run.catch(() => undefined);
    return run;
  }

  deadLetters(query: DeadLetterQuery): Promise<DeadLetterPage> {
    const after = query.after === undefined ? -1 : Number(query.after);
    const items = [...this.dead.values()]
      .filter((d) => Number(d.id) > after && (!query.account || d.account === query.account))
      .sort((a, b) => Number(a.id) - Number(b.id));
    const page = items.slice(0, query.limit);
    return Promise.resolve(
      items.length > page.length ? { items: page, next: page[page.length - 1]!.id } : { items: page },
    );
  }

  deadLetterCount(): Promise<number> {
    return Promise.resolve(this.dead.size);
  }

  async replayDeadLetter(id: string): Promise<boolean> {
    return (await this.replay((line) => String(line.seq) === id)) > 0;
  }

  replayDeadLetters(account: string): Promise<number> {
    return this.replay((line) => line.message.account === account);
  }

  /** Publishes the chosen dead letters again (durably), then rewrites the file without them. */
  private replay(chosen: (line: DeadLetterLine) => boolean): Promise<number> {
    return this.deadFileOp(async () => {
      const lines = await this.readDeadLetters();
      const replayed = new Set<number>();
      try {
        for (const line of lines) {
          if (!chosen(line) || replayed.has(line.seq)) continue;
          await this.publish(line.message);
          replayed.add(line.seq);
        }
      } finally {
        if (replayed.size) {
          const kept = lines.filter((l) => !replayed.has(l.seq));
          const file = join(this.dir, DEAD_LETTER_FILE);
          await writeFile(`${file}.tmp`, kept.map((l) => `${JSON.stringify(l)}\n`).join(''));
          await rename(`${file}.tmp`, file);
          for (const seq of replayed) this.dead.delete(String(seq));
        }
      }
      return replayed.size;
    });
  }

  private async release(seq: number): Promise<void> {
    let segment: Segment | undefined;
    for (const s of this.segments) if (s.firstSeq <= seq) segment = s;
    if (!segment) return;
    segment.live--;
    await this.dropIfSettled(segment);
  }

  private async dropIfSettled(segment: Segment): Promise<void> {
    // Already dropped: sealing it (publish) and settling its last message can both get here.
    const at = this.segments.indexOf(segment);
    if (!segment.sealed || segment.live > 0 || at < 0) return;
    this.segments.splice(at, 1);
    await rm(join(this.dir, segment.file), { force: true });
  }

  async stopConsuming(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    this.consumer = undefined;
  }

  /**
   * Pending counts every message not settled yet, those being processed included, as JetStream's work
   * queue does: "0 message(s) pending" means a clean stop now has nothing left to finish.
   */
  health(): Promise<DriverHealth> {
    const unsettled = this.pending.length + this.inFlight.size;
    return Promise.resolve({
      driver: 'log',
      ready: !this.closed,
      detail: `${unsettled} message(s) pending (${this.inFlight.size} being processed, ${this.retrying} waiting to retry)`,
    });
  }

  override backlog(): Promise<BusBacklog> {
    return Promise.resolve({
      pending: this.pending.length,
      inFlight: this.inFlight.size,
      bytes: this.pendingBytes + [...this.inFlight.values()].reduce((n, e) => n + e.bytes, 0),
      deadLetters: this.dead.size,
    });
  }

  /** Waits until every published message has been settled (tests and benchmarks use it). */
  async drained(): Promise<void> {
    while (this.pending.length || this.inFlight.size || this.writeQueue.length) await sleep(5);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.stopConsuming();
    this.closed = true;
    await this.writing;
    await this.active?.handle.close();
    this.active = undefined;
  }
}

function view(line: DeadLetterLine): DeadLetter {
  return {
    id: String(line.seq),
    account: line.message.account,
    kind: line.message.kind,
    messageId: line.message.id,
    records: line.message.records.length,
    reason: line.reason,
    firstFailedAt: line.firstFailedAt ?? line.at,
    deadLetteredAt: line.at,
    deliveries: line.deliveries,
  };
}

/** Puts a retried message back in its place: the queue stays in publishing order. */
function insertBySeq(queue: Entry[], entry: Entry): void {
  let lo = 0;
  let hi = queue.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (queue[mid]!.seq < entry.seq) lo = mid + 1;
    else hi = mid;
  }
  queue.splice(lo, 0, entry);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
