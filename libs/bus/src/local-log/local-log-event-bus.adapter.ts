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
import { FAULT_POINTS, faultPoint } from '@cdp/faults';
import {
  BusUnavailableError,
  EventBus,
  type BatchConsumer,
  type Delivery,
  type Settlement,
} from '../event-bus.port.js';

export interface LocalLogOptions {
  /** Bytes of accepted but unprocessed messages beyond which publish refuses (the API answers 503). */
  maxPendingBytes: number;
  /** A segment file is closed for writing past this size and deleted once all its messages are settled. */
  segmentBytes?: number;
  /** At most this many records go to the consumer in one batch (whole messages only). */
  maxBatchRecords?: number;
  /** Deliveries of one message before it goes to the dead-letter file. */
  maxDeliveries?: number;
}

interface Entry {
  seq: number;
  message: IngestMessage;
  bytes: number;
  deliveryCount: number;
}

interface Segment {
  firstSeq: number;
  file: string;
  live: number;
  sealed: boolean;
}

const SEGMENT_PREFIX = 'segment-';

/**
 * The embedded bus: an append-only log in the data directory, written with group commit (many
 * concurrent publishes share one fdatasync), delivered from memory, settled by appending sequence
 * numbers to an acks file. At start, every logged message without an ack is delivered again.
 */
export class LocalLogEventBus extends EventBus {
  private readonly segmentBytes: number;
  private readonly maxBatchRecords: number;
  private readonly maxDeliveries: number;
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
    this.maxBatchRecords = options.maxBatchRecords ?? 10_000;
    this.maxDeliveries = options.maxDeliveries ?? 5;
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
        this.enqueue({ seq: parsed.seq, message: parsed.message, bytes: line.length + 1, deliveryCount: 2 });
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
  }

  private enqueue(entry: Entry): void {
    this.pending.push(entry);
    this.pendingBytes += entry.bytes;
    this.wake?.();
  }

  async publish(message: IngestMessage): Promise<void> {
    if (this.closed) throw new BusUnavailableError('the bus is shutting down', 5);
    const seq = this.nextSeq;
    const line = `${JSON.stringify({ seq, message })}\n`;
    // An empty queue takes any message; otherwise the processor is behind and the client must wait.
    if (this.pendingBytes > 0 && this.pendingBytes + line.length > this.options.maxPendingBytes) {
      throw new BusUnavailableError('the processor is behind; the bus is full', 1);
    }
    this.nextSeq++;
    const entry: Entry = { seq, message, bytes: line.length, deliveryCount: 1 };
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
      if (this.pending.length === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const batch = this.takeBatch();
      const deliveries: Delivery[] = batch.map((e) => ({
        handle: String(e.seq),
        message: e.message,
        deliveryCount: e.deliveryCount,
      }));
      let settlements: Settlement[];
      try {
        settlements = await this.consumer!(deliveries);
      } catch (err) {
        settlements = deliveries.map((delivery) => ({ delivery, outcome: 'retry', reason: String(err) }));
      }
      await this.settle(settlements);
    }
  }

  private takeBatch(): Entry[] {
    const batch: Entry[] = [];
    let records = 0;
    while (this.pending.length) {
      const next = this.pending[0]!;
      const size = next.message.records.length;
      if (batch.length && records + size > this.maxBatchRecords) break;
      this.pending.shift();
      this.pendingBytes -= next.bytes;
      this.inFlight.set(next.seq, next);
      batch.push(next);
      records += size;
    }
    return batch;
  }

  private async settle(settlements: Settlement[]): Promise<void> {
    const done: number[] = [];
    const retries: Entry[] = [];
    for (const s of settlements) {
      const seq = Number(s.delivery.handle);
      const entry = this.inFlight.get(seq);
      if (!entry) continue;
      this.inFlight.delete(seq);
      if (s.outcome === 'retry' && entry.deliveryCount < this.maxDeliveries) {
        retries.push({ ...entry, deliveryCount: entry.deliveryCount + 1 });
        continue;
      }
      if (s.outcome !== 'ack') {
        const reason = s.reason;
        await appendFile(
          join(this.dir, 'dead-letter.log'),
          `${JSON.stringify({ seq, reason, deliveries: entry.deliveryCount, at: new Date().toISOString(), message: entry.message })}\n`,
        );
      }
      done.push(seq);
    }
    if (done.length) {
      faultPoint(FAULT_POINTS.busAck);
      await appendFile(this.acksFile, `${done.join(',')}\n`);
      for (const seq of done) await this.release(seq);
    }
    if (retries.length) {
      // Back off before a redelivery so a failing store is not hammered; the rest of the queue waits
      // behind the retried messages to keep delivery in order.
      const attempt = Math.max(...retries.map((e) => e.deliveryCount));
      await sleep(Math.min(100 * 2 ** attempt, 5000));
      this.pending.unshift(...retries);
      this.pendingBytes += retries.reduce((n, e) => n + e.bytes, 0);
    }
  }

  private async release(seq: number): Promise<void> {
    let segment: Segment | undefined;
    for (const s of this.segments) if (s.firstSeq <= seq) segment = s;
    if (!segment) return;
    segment.live--;
    await this.dropIfSettled(segment);
  }

  private async dropIfSettled(segment: Segment): Promise<void> {
    if (!segment.sealed || segment.live > 0) return;
    this.segments.splice(this.segments.indexOf(segment), 1);
    await rm(join(this.dir, segment.file), { force: true });
  }

  async stopConsuming(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    this.consumer = undefined;
  }

  health(): Promise<DriverHealth> {
    return Promise.resolve({
      driver: 'memory (local log)',
      ready: !this.closed,
      detail: `${this.pending.length} message(s) pending`,
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
