import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { DriverHealth } from '@cdp/contracts';
import { MetadataConflictError, MetadataStore, type Versioned } from '../metadata-store.port.js';

interface Entry {
  value: unknown;
  revision: number;
  /** The length of the log line that wrote it: what the entry costs a compacted log. */
  bytes: number;
}

/** One bucket: its records, and its log as this process has it open. */
interface Bucket {
  entries: Map<string, Entry>;
  /** Bytes in the log file, superseded lines included. */
  logBytes: number;
  /** Bytes the log would hold compacted (the sum of the live entries' lines). */
  liveBytes: number;
}

/** A log line: a record's new value at a revision, or its removal. */
type LogLine = { k: string; r: number; v: unknown } | { k: string; d: 1 };

export interface FileMetadataStoreOptions {
  /**
   * A log is compacted (rewritten with only its live records) once it is larger than this and more
   * than twice what its live records take: each write stays one appended line, and the rewrites,
   * amortised, cost at most as much again.
   */
  compactAtBytes?: number;
}

const DEFAULT_COMPACT_AT_BYTES = 1 << 20;

/**
 * The embedded metadata store: each bucket is an append-only log in the data directory (`<bucket>.log`,
 * one JSON line per change, fsynced before the change is visible), with writes serialised in this
 * process. A write appends its line only, whatever the bucket's history, so its cost stays flat as the
 * deployment ages; the log is compacted at open and past a size (write aside, fsync, rename).
 *
 * A crash mid-append leaves at most a torn last line (no newline: JSON escapes every newline in a
 * value); it was never acknowledged, so opening drops it. A bucket still in the earlier whole-file
 * format (`<bucket>.json`) is read once and compacted into a log.
 */
export class FileMetadataStore extends MetadataStore {
  private readonly buckets = new Map<string, Bucket>();
  private chain: Promise<unknown> = Promise.resolve();
  private written = 0;
  private readonly compactAtBytes: number;

  constructor(
    private readonly dir: string,
    options: FileMetadataStoreOptions = {},
  ) {
    super();
    this.compactAtBytes = options.compactAtBytes ?? DEFAULT_COMPACT_AT_BYTES;
    mkdirSync(dir, { recursive: true });
    const files = readdirSync(dir);
    for (const file of files.filter((f) => f.endsWith('.log'))) {
      const name = file.slice(0, -4);
      const bucket = this.readLog(join(dir, file));
      this.buckets.set(name, bucket);
      if (this.bloated(bucket)) this.compactNow(name, bucket);
    }
    for (const file of files.filter((f) => f.endsWith('.json'))) {
      const name = file.slice(0, -5);
      // With a log beside it, the log was compacted from it and a crash came before it was removed.
      if (!this.buckets.has(name)) {
        const bucket = readLegacy(join(dir, file));
        this.compactNow(name, bucket);
        this.buckets.set(name, bucket);
      }
      rmSync(join(dir, file));
    }
  }

  /** Bytes this process appended or compacted into logs: what a write costs, as a test measures it. */
  get bytesWritten(): number {
    return this.written;
  }

  private bucket(name: string): Bucket {
    if (!/^[a-z0-9_-]+$/.test(name)) throw new Error(`not a bucket name: ${name}`);
    let bucket = this.buckets.get(name);
    if (!bucket) this.buckets.set(name, (bucket = { entries: new Map(), logBytes: 0, liveBytes: 0 }));
    return bucket;
  }

  get<T>(bucket: string, key: string): Promise<Versioned<T> | undefined> {
    const entry = this.bucket(bucket).entries.get(key);
    return Promise.resolve(
      entry ? { key, value: structuredClone(entry.value) as T, revision: entry.revision } : undefined,
    );
  }

  create<T>(bucket: string, key: string, value: T): Promise<number> {
    return this.serialised(async () => {
      const b = this.bucket(bucket);
      if (b.entries.has(key)) throw new MetadataConflictError(`${bucket}/${key} already exists`);
      await this.append(bucket, b, { k: key, r: 1, v: structuredClone(value) });
      return 1;
    });
  }

  update<T>(bucket: string, key: string, value: T, revision: number): Promise<number> {
    return this.serialised(async () => {
      const b = this.bucket(bucket);
      const current = b.entries.get(key);
      if (!current || current.revision !== revision) {
        throw new MetadataConflictError(`${bucket}/${key} changed since revision ${revision}`);
      }
      await this.append(bucket, b, { k: key, r: revision + 1, v: structuredClone(value) });
      return revision + 1;
    });
  }

  delete(bucket: string, key: string): Promise<void> {
    return this.serialised(async () => {
      const b = this.bucket(bucket);
      if (!b.entries.has(key)) return;
      await this.append(bucket, b, { k: key, d: 1 });
    });
  }

  list<T>(bucket: string): Promise<Versioned<T>[]> {
    return Promise.resolve(
      [...this.bucket(bucket).entries].map(([key, e]) => ({
        key,
        value: structuredClone(e.value) as T,
        revision: e.revision,
      })),
    );
  }

  /** Appends one change durably, then applies it: only a durable write changes what readers see. */
  private async append(name: string, bucket: Bucket, line: LogLine): Promise<void> {
    const text = `${JSON.stringify(line)}\n`;
    const bytes = Buffer.byteLength(text);
    // Opened per append: no handle outlives a write (a store never closed leaks none).
    const handle = await open(this.logFile(name), 'a');
    try {
      await handle.write(text);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    this.written += bytes;
    bucket.logBytes += bytes;
    apply(bucket, line, bytes);
    if (this.bloated(bucket)) await this.compact(name, bucket);
  }

  private bloated(bucket: Bucket): boolean {
    return bucket.logBytes > this.compactAtBytes && bucket.logBytes > 2 * bucket.liveBytes;
  }

  /** Rewrites the log with the live records only, atomically (write aside, fsync, rename). */
  private async compact(name: string, bucket: Bucket): Promise<void> {
    const file = this.logFile(name);
    const text = compacted(bucket);
    const handle = await open(`${file}.tmp`, 'w');
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(`${file}.tmp`, file);
    await syncDir(this.dir);
    this.compacted(bucket, text);
  }

  /** `compact` at open (the constructor is synchronous). */
  private compactNow(name: string, bucket: Bucket): void {
    const file = this.logFile(name);
    const text = compacted(bucket);
    const fd = openSync(`${file}.tmp`, 'w');
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(`${file}.tmp`, file);
    const dirFd = openSync(this.dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    this.compacted(bucket, text);
  }

  private compacted(bucket: Bucket, text: string): void {
    const bytes = Buffer.byteLength(text);
    this.written += bytes;
    bucket.logBytes = bytes;
    bucket.liveBytes = 0;
    for (const [key, entry] of bucket.entries) {
      entry.bytes = Buffer.byteLength(lineOf(key, entry));
      bucket.liveBytes += entry.bytes;
    }
  }

  /** A bucket's log, without a torn last line (cut off the file too, so appends start on a line). */
  private readLog(file: string): Bucket {
    const text = readFileSync(file, 'utf8');
    const end = text.lastIndexOf('\n') + 1;
    if (end < text.length) truncateSync(file, Buffer.byteLength(text.slice(0, end)));
    const bucket: Bucket = { entries: new Map(), logBytes: 0, liveBytes: 0 };
    for (const raw of text.slice(0, end).split('\n')) {
      if (raw === '') continue;
      const bytes = Buffer.byteLength(raw) + 1;
      bucket.logBytes += bytes;
      apply(bucket, JSON.parse(raw) as LogLine, bytes);
    }
    return bucket;
  }

  private logFile(name: string): string {
    return join(this.dir, `${name}.log`);
  }

  private serialised<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work, work);
    this.chain = run.catch(() => undefined);
    return run;
  }

  health(): Promise<DriverHealth> {
    return Promise.resolve({ driver: 'file', ready: true });
  }

  close(): Promise<void> {
    return this.chain.then(() => undefined);
  }
}

/** Applies a log line to the bucket's records (`bytes`: the line's length, 0 when not from a log). */
function apply(bucket: Bucket, line: LogLine, bytes: number): void {
  const before = bucket.entries.get(line.k);
  if (before) bucket.liveBytes -= before.bytes;
  if ('d' in line) {
    bucket.entries.delete(line.k);
  } else {
    bucket.entries.set(line.k, { value: line.v, revision: line.r, bytes });
    bucket.liveBytes += bytes;
  }
}

/** A bucket of the whole-file format (entries and revisions, no log lines yet). */
function readLegacy(file: string): Bucket {
  const entries = JSON.parse(readFileSync(file, 'utf8')) as [string, { value: unknown; revision: number }][];
  const bucket: Bucket = { entries: new Map(), logBytes: 0, liveBytes: 0 };
  for (const [k, e] of entries) apply(bucket, { k, r: e.revision, v: e.value }, 0);
  return bucket;
}

/** The log line that writes an entry as it is now. */
function lineOf(key: string, entry: Entry): string {
  return `${JSON.stringify({ k: key, r: entry.revision, v: entry.value } satisfies LogLine)}\n`;
}

/** The log of the live records only. */
function compacted(bucket: Bucket): string {
  return [...bucket.entries].map(([k, e]) => lineOf(k, e)).join('');
}

/** Makes a rename in the directory durable. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
