import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { loadConfig } from '@cdp/config';
import { MemoryPurchaseNotices } from '@cdp/recommendations/memory';
import { NatsPurchaseNotices } from '@cdp/recommendations/nats';
import type { PurchaseNotice, PurchaseNotices } from './purchase-notices.port.js';

/** Runs against the NATS server of the machine (NATS_URL or 127.0.0.1:4222); it must be up under CI. */
const url = loadConfig().natsServers;

/** One sender, two listeners (two processes that recommend, for NATS: three connections). */
interface Wiring {
  sender: PurchaseNotices;
  listeners: PurchaseNotices[];
  /** Lets what was sent or subscribed reach the server (NATS). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

const drivers: [string, () => Promise<Wiring>][] = [
  [
    'memory',
    () => {
      const notices = new MemoryPurchaseNotices();
      const done = () => Promise.resolve();
      return Promise.resolve({ sender: notices, listeners: [notices, notices], flush: done, close: done });
    },
  ],
  [
    'nats',
    async () => {
      const prefix = `test_${randomUUID().slice(0, 8)}`;
      const connections: NatsConnection[] = await Promise.all([0, 1, 2].map(() => connect({ servers: url })));
      const [sender, ...listeners] = connections.map(
        (nc) =>
          new NatsPurchaseNotices(nc, prefix, (err) => {
            throw err;
          }),
      );
      return {
        sender: sender!,
        listeners,
        flush: async () => {
          await Promise.all(connections.map((nc) => nc.flush()));
        },
        close: async () => {
          await Promise.all(connections.map((nc) => nc.close()));
        },
      };
    },
  ],
];

describe.each(drivers)('PurchaseNotices (%s)', (_name, make) => {
  let wiring: Wiring;
  beforeEach(async () => {
    wiring = await make();
  });
  afterEach(() => wiring.close());

  it('tells every listener each notice, until it stops listening', async () => {
    const heard: PurchaseNotice[][] = [[], []];
    const waiters = wiring.listeners.map(
      (listener, i) =>
        new Promise<void>((resolve) => {
          const stop = listener.listen((notice) => {
            heard[i]!.push(notice);
            if (heard[i]!.length === 2) {
              stop();
              resolve();
            }
          });
        }),
    );
    await wiring.flush();
    const first = { account: 'a1', purchases: [{ customer: 'c1', product: 'pan' }] };
    const second = { account: 'a2', purchases: [{ customer: 'c2', product: 'pot' }] };
    wiring.sender.notify(first);
    wiring.sender.notify(second);
    await Promise.all(waiters);
    expect(heard).toEqual([
      [first, second],
      [first, second],
    ]);
    wiring.sender.notify(first); // nobody listens any more
    await wiring.flush();
    expect(heard[0]).toHaveLength(2);
  });
});
