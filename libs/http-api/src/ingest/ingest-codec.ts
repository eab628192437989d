import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { LOGGER, type Logger } from '@cdp/logger';
import { encodeEventsBody, type EncodedEvents, type EventsEncodeContext } from '../events/events-codec.js';

interface Pending {
  bytes: Uint8Array;
  context: EventsEncodeContext;
  resolve: (result: EncodedEvents) => void;
  reject: (err: Error) => void;
}

interface CodecThread {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Whether it ever answered: a thread that fails before that (it cannot load) is not started again. */
  answered: boolean;
}

/**
 * Reads, validates, normalizes and encodes `POST /v3/events` bodies on worker threads
 * (`CDP_INGEST_WORKERS`), so that the main thread, which also runs the embedded processor, keeps only
 * the HTTP exchange and the bus write: the bytes go to a thread and the records' JSON comes back, both
 * copied flat (no object graph crosses). With no worker (0, or no built worker file) it runs here.
 */
@Injectable()
export class IngestCodec implements OnModuleDestroy {
  private readonly threads: CodecThread[] = [];
  private nextId = 1;
  private readonly file: string | undefined;
  private closed = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.file = config.ingestWorkers > 0 ? workerFile() : undefined;
    if (config.ingestWorkers > 0 && !this.file)
      logger.warn('the ingest codec worker is not built; request bodies are read on the main thread');
    if (this.file) for (let i = 0; i < config.ingestWorkers; i++) this.threads.push(this.start(this.file));
  }

  /** Worker threads running now (0: bodies are read on the main thread). */
  runningThreads(): number {
    return this.threads.length;
  }

  encodeEvents(bytes: Uint8Array, context: EventsEncodeContext): Promise<EncodedEvents> {
    if (this.threads.length === 0) return Promise.resolve(encodeEventsBody(bytes, context));
    // The thread with the fewest bodies waiting.
    const thread = this.threads.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    const id = this.nextId++;
    return new Promise<EncodedEvents>((resolve, reject) => {
      thread.pending.set(id, { bytes, context, resolve, reject });
      // The bytes are copied, not transferred: the request keeps its body (the event inspector reads it).
      thread.worker.postMessage({ id, bytes, context });
    });
  }

  private start(file: string): CodecThread {
    const thread: CodecThread = { worker: new Worker(file), pending: new Map(), answered: false };
    thread.worker.unref();
    thread.worker.on(
      'message',
      ({ id, result, error }: { id: number; result?: EncodedEvents; error?: string }) => {
        const waiting = thread.pending.get(id);
        thread.pending.delete(id);
        thread.answered = true;
        if (error !== undefined) waiting?.reject(new Error(`the ingest codec failed: ${error}`));
        else waiting?.resolve(result!);
      },
    );
    const fail = (err: Error) => {
      const at = this.threads.indexOf(thread);
      if (at >= 0 && !this.closed) {
        if (thread.answered) {
          this.logger.error({ err }, 'an ingest codec thread stopped; starting another');
          this.threads[at] = this.start(file);
        } else {
          this.logger.warn({ err }, 'an ingest codec thread could not start; reading bodies without it');
          this.threads.splice(at, 1);
        }
      }
      // What it held is read here: a request never fails because a codec thread did.
      for (const waiting of thread.pending.values()) {
        if (this.closed) waiting.reject(err);
        else waiting.resolve(encodeEventsBody(waiting.bytes, waiting.context));
      }
      thread.pending.clear();
    };
    thread.worker.on('error', fail);
    thread.worker.on('exit', (code) => fail(new Error(`the ingest codec thread exited (${code})`)));
    return thread;
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }
}

/**
 * The worker's file: beside this one when it runs built; the build's copy when the TypeScript sources run
 * (the test runner), which `npm test` builds first.
 */
function workerFile(): string | undefined {
  const here = fileURLToPath(import.meta.url);
  const candidates = [
    here.replace(/ingest-codec\.[jt]s$/, 'ingest-codec.worker.js'),
    here
      .replace(/([\\/])libs([\\/])http-api([\\/])/, '$1dist$1libs$2http-api$3')
      .replace(/ingest-codec\.ts$/, 'ingest-codec.worker.js'),
  ];
  return candidates.find((file) => file.endsWith('.js') && existsSync(file));
}
