import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { EngineUnavailableError } from '@cdp/contracts';

/**
 * Reads that only the store's owner can answer (a processor with chDB opens the store; the API does not),
 * asked over NATS request/reply: any owner in the subject's queue group answers. Recommendations, segment
 * event counts and the console's reads all go this way, with one reply shape.
 */
type Reply<T> = { result: T } | { error: string };

export interface StoreOwnerRequests {
  /** The subject the requests go to (the deployment's prefix included). */
  subject: string;
  /** The queue group the owners answer in. */
  queue: string;
  /** How long the asker waits before the store counts as unavailable (a 503). */
  timeoutMs: number;
  /** What is asked, for the error a failed answer gives. */
  what: string;
}

/** Asks the store's owner; no answer in time is EngineUnavailableError, an owner's failure an Error. */
export async function askStoreOwner<T>(
  nc: NatsConnection,
  requests: StoreOwnerRequests,
  request: unknown,
): Promise<T> {
  let reply: Reply<T>;
  try {
    const msg = await nc.request(requests.subject, JSON.stringify(request), { timeout: requests.timeoutMs });
    reply = msg.json<Reply<T>>();
  } catch (err) {
    throw new EngineUnavailableError('store', `no answer from the store's owner (${String(err)})`);
  }
  if ('error' in reply) throw new Error(`${requests.what} failed: ${reply.error}`);
  return reply.result;
}

/** Answers requests as the store's owner until closed; a failure is logged and sent back as the reply. */
export class StoreOwnerResponder<Req, Res> {
  private readonly subscription: Subscription;

  constructor(
    nc: NatsConnection,
    requests: StoreOwnerRequests,
    answer: (request: Req) => Promise<Res>,
    onError: (err: unknown) => void,
  ) {
    this.subscription = nc.subscribe(requests.subject, {
      queue: requests.queue,
      callback: (err, msg) => {
        if (err) return onError(err);
        void (async () => {
          let reply: Reply<Res>;
          try {
            reply = { result: await answer(msg.json<Req>()) };
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
