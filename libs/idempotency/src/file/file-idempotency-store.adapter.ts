import { closeSync, fdatasyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { DriverHealth } from '@cdp/contracts';
import { IdempotencyStore } from '../idempotency-store.port.js';

interface Entry {
  value: string;
  expiresAt: number;
}

/** One line of the log: a value with its expiry, or (no `v`) a deletion. */
interface LogLine {
  k: string;
  v?: string;
  e?: number;
}

/** The log is rewritten with only live entries once it holds at least this many lines. */
const COMPACT_AT_LINES = 1024;

/**
 * The embedded driver: every record in memory, every change appended to a log in the data directory
 * and synced (changes waiting together share one fdatasync). At start the log is read back, expired
 * entries dropped and the log rewritten; it is rewritten the same way whenever it has doubled since, so
 * expired records do not pile up on disk. One process owns the directory; it is opened at the first
 * request with a key, so a process that serves none (a processor, an exporter) never touches it.
 *
 * A change is visible to the next call at once (the caller's promise resolves when it is on disk):
 * compare-and-set stays atomic within the process without waiting for the disk.
 */
export class FileIdempotencyStore extends IdempotencyStore {
  private readonly entries = new Map<string, Entry>();
  private readonly file: string;
  private handle: Promise<FileHandle> | undefined;
  private lines = 0;
  /** The log's lines when last rewritten: it is rewritten again once it has doubled (amortised cost). */
  private linesAfterRewrite = 0;
  private waiting: { line: string; done: (err?: Error) => void }[] = [];
  private flushing: Promise<void> | undefined;

  constructor(
    dir: string,
    private readonly clock: () => number = Date.now,
  ) {
    super();
    this.file = join(dir, 'idempotency.log');
  }

  private opened(): Promise<FileHandle> {
    if (!this.handle) {
      mkdirSync(dirname(this.file), { recursive: true });
      this.load();
      this.rewrite();
      this.handle = open(this.file, 'a');
    }
    return this.handle;
  }

  get(account: string, key: string): Promise<string | undefined> {
    void this.opened();
    return Promise.resolve(this.live(entryKey(account, key))?.value);
  }

  compareAndSet(
    account: string,
    key: string,
    expected: string | undefined,
    next: string | undefined,
    expiresAtMs: number,
  ): Promise<boolean> {
    void this.opened();
    const k = entryKey(account, key);
    if (this.live(k)?.value !== expected) return Promise.resolve(false);
    if (next === undefined) this.entries.delete(k);
    else this.entries.set(k, { value: next, expiresAt: expiresAtMs });
    const line: LogLine = next === undefined ? { k } : { k, v: next, e: expiresAtMs };
    return this.append(JSON.stringify(line)).then(() => true);
  }

  private live(k: string): Entry | undefined {
    const entry = this.entries.get(k);
    if (entry && entry.expiresAt <= this.clock()) {
      this.entries.delete(k);
      return undefined;
    }
    return entry;
  }

  private append(line: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ line, done: (err) => (err === undefined ? resolve() : reject(err)) });
      this.flushing ??= this.flush().finally(() => (this.flushing = undefined));
    });
  }

  /** Writes what waits, one write and one fdatasync per round, until nothing waits. */
  private async flush(): Promise<void> {
    while (this.waiting.length) {
      const batch = this.waiting;
      this.waiting = [];
      try {
        const handle = await this.opened();
        await handle.write(batch.map((w) => `${w.line}\n`).join(''));
        await handle.datasync();
        this.lines += batch.length;
        for (const w of batch) w.done();
      } catch (err) {
        for (const w of batch) w.done(err instanceof Error ? err : new Error(String(err)));
      }
      if (this.lines >= Math.max(COMPACT_AT_LINES, 2 * this.linesAfterRewrite)) await this.compact();
    }
  }

  private async compact(): Promise<void> {
    const handle = await this.opened();
    await handle.close();
    this.sweep();
    this.rewrite();
    this.handle = open(this.file, 'a');
  }

  private sweep(): void {
    const now = this.clock();
    for (const [k, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(k);
  }

  private load(): void {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const raw of text.split('\n')) {
      if (!raw) continue;
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        continue; // the torn last line of a crash: that change never returned to its caller
      }
      if (line.v === undefined) this.entries.delete(line.k);
      else this.entries.set(line.k, { value: line.v, expiresAt: line.e ?? 0 });
    }
    this.sweep();
  }

  /** The live entries into a new file (write, sync, rename), synchronously: nothing else writes meanwhile. */
  private rewrite(): void {
    const tmp = `${this.file}.tmp`;
    const fd = openSync(tmp, 'w');
    try {
      const body = [...this.entries]
        .map(([k, e]) => `${JSON.stringify({ k, v: e.value, e: e.expiresAt } satisfies LogLine)}\n`)
        .join('');
      writeSync(fd, body);
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
    this.lines = this.linesAfterRewrite = this.entries.size;
  }

  health(): Promise<DriverHealth> {
    return Promise.resolve({ driver: 'file', ready: true });
  }

  async close(): Promise<void> {
    await this.flushing;
    await (await this.handle)?.close();
    this.handle = undefined;
  }
}

function entryKey(account: string, key: string): string {
  return `${account}\u0000${key}`;
}
