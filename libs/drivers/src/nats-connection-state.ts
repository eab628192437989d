import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Whether the NATS connection is up right now, followed from its status events. While it is down the
 * client would hold publishes and requests in its reconnect buffer until their timeout: a publish
 * buffered there may still reach JetStream after the API answered 503 (the client then sends it again:
 * a double), and every request would wait the whole timeout. The drivers ask this first and refuse at
 * once instead.
 */
export function watchNatsConnection(nc: NatsConnection): () => boolean {
  let connected = !nc.isClosed();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') connected = false;
      else if (status.type === 'reconnect') connected = true;
    }
    connected = false; // the iterator ends when the connection is closed for good
  })();
  return () => connected && !nc.isClosed();
}
