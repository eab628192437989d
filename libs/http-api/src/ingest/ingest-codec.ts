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
  /** Whether it has loaded (it says so first): a thread that fails before that is not started again. */
  ready: boolean;
  whenReady: Promise<void>;
}

/**
 * Reads, validates, normalizes and encodes `POST /v3/events` bodies on worker threads
 * (`CDP_INGEST_WORKERS`), so that the main thread, which also runs the embedded processor, keeps only
 * the HTTP exchange and the bus write: the bytes go to a thread and the records' JSON comes back, both
 * copied flat (no object graph crosses). With no worker (0, or no built worker file) it runs here.
 *
 * The threads start with the first body, not with the process: loading their code would compete with
 * the boot for the CPU, and a process that never ingests events needs none. Until a thread has loaded,
 * bodies are read here.
 */
@Injectable()
export class IngestCodec implements OnModuleDestroy {
  private readonly threads: CodecThread[] = [];
  private started = false;
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
  }

  /** Starts the threads (once) and waits until each has loaded or failed to. */
  async start(): Promise<void> {
    if (!this.started && this.file && !this.closed) {
      this.started = true;
      for (let i = 0; i < this.config.ingestWorkers; i++) this.threads.push(this.spawn(this.file));
    }
    await Promise.all(this.threads.map((t) => t.whenReady));
  }

  /** Worker threads loaded and reading bodies now (0: bodies are read on the main thread). */
  runningThreads(): number {
    return this.threads.filter((t) => t.ready).length;
  }

  encodeEvents(bytes: Uint8Array, context: EventsEncodeContext): Promise<EncodedEvents> {
    if (!this.started) void this.start();
    const ready = this.threads.filter((t) => t.ready);
    if (ready.length === 0) return Promise.resolve(encodeEventsBody(bytes, context));
    // The thread with the fewest bodies waiting.
    const thread = ready.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    const id = this.nextId++;
    return new Promise<EncodedEvents>((resolve, reject) => {
      thread.pending.set(id, { bytes, context, resolve, reject });
      // The bytes are copied, not transferred: the request keeps its body (the event inspector reads it).
      thread.worker.postMessage({ id, bytes, context });
    });
  }

  private spawn(file: string): CodecThread {
    let loaded: () => void = () => undefined;
    const thread: CodecThread = {
      worker: new Worker(file),
      pending: new Map(),
      ready: false,
      whenReady: new Promise<void>((resolve) => (loaded = resolve)),
    };
    thread.worker.unref();
    thread.worker.on(
      'message',
      ({ id, result, error }: { id?: number; result?: EncodedEvents; error?: string }) => {
        if (id === undefined) {
          thread.ready = true;
          return loaded();
        }
        const waiting = thread.pending.get(id);
        thread.pending.delete(id);
        if (error !== undefined) waiting?.reject(new Error(`the ingest codec failed: ${error}`));
        else waiting?.resolve(result!);
      },
    );
    const fail = (err: Error) => {
      loaded();
      const at = this.threads.indexOf(thread);
      if (at >= 0 && !this.closed) {
        if (thread.ready) {
          this.logger.error({ err }, 'an ingest codec thread stopped; starting another');
          this.threads[at] = this.spawn(file);
        } else {
          this.logger.warn({ err }, 'an ingest codec thread could not start; reading bodies without it');
          this.threads.splice(at, 1);
        }
      }
      // What it held is read here: a request never fails because a codec thread did.
      for (const waiting of thread.pending.values()) {
        if (this.closed) {
          waiting.reject(err);
          continue;
        }
        try {
          waiting.resolve(encodeEventsBody(waiting.bytes, waiting.context));
        } catch (unexpected) {
          // Not a refusal (those are answers): the request fails alone, not the thread's handler.
          waiting.reject(unexpected instanceof Error ? unexpected : new Error(String(unexpected)));
        }
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
