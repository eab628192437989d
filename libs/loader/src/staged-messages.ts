import { once } from 'node:events';
import { mkdir, open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import type { LoadedRecord } from './record-rules.js';
import { textLines } from './text-lines.js';

/** One bus message's worth of a file's valid records, as the single reading pass made them. */
export interface StagedMessage {
  kind: LoadedRecord['kind'];
  records: unknown[];
  /** Lines of the file the records cover (an order covers its lines): the loaded count. */
  lines: number;
}

/**
 * The valid records of a file, grouped into bus messages and written to a local file while the file
 * is read and checked once; published from it once the 1% verdict is known. The staging file is
 * unlinked as soon as it is opened: it lives only as long as this loader holds it open, so a loader
 * that dies leaves nothing behind, and a loader taking the file over builds its own from the file
 * (the same file, read the same way, gives the same messages in the same order: their ids hold).
 */
export class StagedMessages {
  private readonly out: Writable;
  private closed = false;

  private constructor(private readonly handle: FileHandle) {
    this.out = handle.createWriteStream({ autoClose: false, highWaterMark: 1 << 20 });
  }

  static async create(dir: string, name: string): Promise<StagedMessages> {
    await mkdir(dir, { recursive: true });
    const path = join(dir, `${name}.staging`);
    const handle = await open(path, 'w+');
    await unlink(path);
    return new StagedMessages(handle);
  }

  /** Appends one message; waits when the disk is behind, so memory holds a few messages at most. */
  async append(message: StagedMessage): Promise<void> {
    if (!this.out.write(`${JSON.stringify(message)}\n`)) await once(this.out, 'drain');
  }

  /** The staged messages in order from the `from`th (earlier ones are not even parsed), once the writing is done. */
  async *messages(from = 0): AsyncGenerator<StagedMessage> {
    await this.finishWriting();
    // Read as the publisher takes the messages: at most a chunk ahead of it.
    const input = this.handle.createReadStream({ start: 0, autoClose: false, highWaterMark: 1 << 20 });
    let index = 0;
    for await (const line of textLines(input))
      if (line && index++ >= from) yield JSON.parse(line) as StagedMessage;
  }

  /** Lets go of the staging file (its space is freed: it has no name). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.out.destroy();
    await this.handle.close();
  }

  private async finishWriting(): Promise<void> {
    if (this.out.writableFinished) return;
    this.out.end();
    await once(this.out, 'finish');
  }
}
