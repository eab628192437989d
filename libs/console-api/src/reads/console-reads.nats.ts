import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { EngineUnavailableError } from '@cdp/contracts';
import {
  CONSOLE_READS,
  RemoteConsoleReads,
  type ConsoleReadName,
  type ConsoleStoreReads,
} from './console-store-reads.js';

/** How long a console page waits for the store's owner before answering 503. */
const REQUEST_TIMEOUT_MS = 10_000;

export function consoleReadsSubject(prefix: string): string {
  return `${prefix}.console-reads`;
}

interface Request {
  method: ConsoleReadName;
  args: unknown[];
}
type Reply = { result: unknown } | { error: string };

/** Asks the process that owns the store (the processor, with chDB) over NATS request/reply. */
export class NatsConsoleReads extends RemoteConsoleReads {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  async ask<M extends ConsoleReadName>(
    method: M,
    args: Parameters<ConsoleStoreReads[M]>,
  ): Promise<Awaited<ReturnType<ConsoleStoreReads[M]>>> {
    let reply: Reply;
    try {
      const request: Request = { method, args };
      const msg = await this.nc.request(consoleReadsSubject(this.prefix), JSON.stringify(request), {
        timeout: REQUEST_TIMEOUT_MS,
      });
      reply = msg.json<Reply>();
    } catch (err) {
      throw new EngineUnavailableError('store', `no answer from the store's owner (${String(err)})`);
    }
    if ('error' in reply) throw new Error(`console read ${method} failed: ${reply.error}`);
    return reply.result as Awaited<ReturnType<ConsoleStoreReads[M]>>;
  }
}

/** Answers the API's console reads from the store this process owns; only the reads CONSOLE_READS names. */
export class ConsoleReadsResponder {
  private readonly subscription: Subscription;

  constructor(nc: NatsConnection, prefix: string, reads: ConsoleStoreReads, onError: (err: unknown) => void) {
    this.subscription = nc.subscribe(consoleReadsSubject(prefix), {
      queue: 'console-readers',
      callback: (err, msg) => {
        if (err) return onError(err);
        void (async () => {
          let reply: Reply;
          try {
            const { method, args } = msg.json<Request>();
            if (!CONSOLE_READS.includes(method) || !Array.isArray(args))
              throw new Error('not a console read');
            const read = reads[method].bind(reads) as (...a: unknown[]) => Promise<unknown>;
            reply = { result: await read(...args) };
          } catch (e) {
            onError(e);
            reply = { error: e instanceof Error ? e.message : String(e) };
          }
          msg.respond(JSON.stringify(reply));
        })();
      },
    });
  }

  async close(): Promise<void> {
    await this.subscription.drain();
  }
}
