import type { NatsConnection } from '@nats-io/transport-node';
import { askStoreOwner, StoreOwnerResponder, type StoreOwnerRequests } from '@cdp/store/nats';
import {
  CONSOLE_READS,
  RemoteConsoleReads,
  type ConsoleReadName,
  type ConsoleStoreReads,
} from '../reads/console-store-reads.js';

export function consoleReadsSubject(prefix: string): string {
  return `${prefix}.console-reads`;
}

const requests = (prefix: string): StoreOwnerRequests => ({
  subject: consoleReadsSubject(prefix),
  queue: 'console-readers',
  // A console page waits longer than an API call: its reads scan more.
  timeoutMs: 10_000,
  what: 'console read',
});

interface Request {
  method: ConsoleReadName;
  args: unknown[];
}

/** Asks the process that owns the store (the processor, with chDB) over NATS request/reply. */
export class NatsConsoleReads extends RemoteConsoleReads {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    super();
  }

  ask<M extends ConsoleReadName>(
    method: M,
    args: Parameters<ConsoleStoreReads[M]>,
  ): Promise<Awaited<ReturnType<ConsoleStoreReads[M]>>> {
    const request: Request = { method, args };
    return askStoreOwner(this.nc, requests(this.prefix), request);
  }
}

/** Answers the API's console reads from the store this process owns; only the reads CONSOLE_READS names. */
export class ConsoleReadsResponder extends StoreOwnerResponder<Request, unknown> {
  constructor(nc: NatsConnection, prefix: string, reads: ConsoleStoreReads, onError: (err: unknown) => void) {
    super(
      nc,
      requests(prefix),
      ({ method, args }) => {
        if (!CONSOLE_READS.includes(method) || !Array.isArray(args)) throw new Error('not a console read');
        const read = reads[method].bind(reads) as (...a: unknown[]) => Promise<unknown>;
        return read(...args);
      },
      onError,
    );
  }
}
