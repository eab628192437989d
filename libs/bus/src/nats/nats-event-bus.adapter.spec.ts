import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { INGEST_PATTERN, type EventsMessage } from '@cdp/contracts';
import { loadConfig } from '@cdp/config';
import { BusTransport } from '../bus.transport.js';
import { collector, eventBusContract, message, type BusTestOptions } from '../event-bus.contract.js';
import { eventually } from '../../../../test/support/eventually.js';
import { BusUnavailableError, type Delivery, type EventBus } from '../event-bus.port.js';
import { failureOf, ok, type DeliveryResult } from '../step-result.js';
import { NatsEventBus } from './nats-event-bus.adapter.js';

/** Runs against the NATS server of the machine (NATS_URL or 127.0.0.1:4222); it must be up under CI. */
const url = loadConfig().natsServers;
const connections: NatsConnection[] = [];

afterAll(async () => {
  for (const nc of connections) await nc.close();
});

function harness() {
  const prefix = `T${randomBytes(4).toString('hex').toUpperCase()}`;
  const buses: EventBus[] = [];
  return {
    prefix,
    async open(o: BusTestOptions = {}) {
      const nc = await connect({ servers: url });
      connections.push(nc);
      const bus = await NatsEventBus.open(nc, {
        replicas: 1,
        maxBytes: o.maxPendingBytes ?? 64 * 1024 * 1024,
        maxDeliveries: o.maxDeliveries,
        maxBatchRecords: o.maxBatchRecords,
        retryBaseMs: o.retryBaseMs,
        retryCapMs: o.retryCapMs,
        streamPrefix: prefix,
      });
      buses.push(bus);
      return bus;
    },
    async cleanup() {
      for (const b of buses) await b.close();
      const nc = await connect({ servers: url });
      const jsm = await jetstreamManager(nc);
      for (const s of [`${prefix}_INGEST`, `${prefix}_DEAD_LETTER`])
        await jsm.streams.delete(s).catch(() => false);
      await nc.close();
    },
  };
}

eventBusContract('NATS JetStream', harness);

describe('NatsEventBus specifics', () => {
  it.each(['published', 'published encoded'])(
    'splits a request larger than the server takes into parts, each delivered once (%s)',
    async (how) => {
      const h = harness();
      const bus = await h.open();
      // Random text does not compress: 3000 records of 1 KiB are well above a 1 MiB max_payload.
      const big = message('huge', 3000);
      big.records.forEach(
        (r) => ((r as { data: Record<string, string> }).data.page = randomBytes(700).toString('base64')),
      );
      if (how === 'published') await bus.publish(big);
      else {
        const { records, ...head } = big;
        await bus.publishEncoded({
          head: head as Omit<EventsMessage, 'records'>,
          count: records.length,
          recordsJson: JSON.stringify(records),
        });
      }
      const c = collector();
      bus.consume(c.consumer);
      await eventually(() => c.seen.reduce((n, d) => n + d.message.records.length, 0) === 3000, 10_000);
      const ids = c.seen.map((d) => d.message.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.every((id) => id.startsWith('huge.p'))).toBe(true);
      await h.cleanup();
    },
  );

  it('publishes a re-sent request id only once (JetStream deduplication)', async () => {
    const h = harness();
    const bus = await h.open();
    await bus.publish(message('same-id'));
    await bus.publish(message('same-id'));
    // Published last, so delivered last (one account keeps its order): once it is in, every copy of
    // the re-sent id that was stored has been delivered.
    await bus.publish(message('sentinel'));
    const c = collector();
    bus.consume(c.consumer);
    await eventually(() => c.seen.some((d) => d.message.id === 'sentinel'));
    expect(c.seen.map((d) => d.message.id)).toEqual(['same-id', 'sentinel']);
    await h.cleanup();
  });

  it('refuses at once while the connection is down: nothing waits in the reconnect buffer to land after a 503', async () => {
    const h = harness();
    await h.open(); // creates the streams
    const nc = await connect({ servers: url });
    connections.push(nc);
    let up = false;
    const bus = await NatsEventBus.open(nc, {
      replicas: 1,
      maxBytes: 64 * 1024 * 1024,
      streamPrefix: h.prefix,
      connected: () => up,
    });
    await expect(bus.publish(message('while-down'))).rejects.toBeInstanceOf(BusUnavailableError);
    up = true;
    await bus.publish(message('when-up'));
    const c = collector();
    bus.consume(c.consumer);
    await eventually(() => c.seen.length >= 1);
    // A message held back while down would reach the stream before anything published after it (the
    // connection's outbound buffer is first in, first out; one account keeps its order): once a
    // sentinel published now has arrived, nothing else can still land.
    await bus.publish(message('sentinel'));
    await eventually(() => c.seen.some((d) => d.message.id === 'sentinel'));
    expect(c.seen.map((d) => d.message.id)).toEqual(['when-up', 'sentinel']);
    await bus.close();
    await h.cleanup();
  });
});

/**
 * The processor's side of the two-batches-in-flight contract, as IngestPipeline (libs/processor) keeps
 * it, around a store `write`: writes go one after the other in arrival order, and a failure is a result.
 */
function pipelineModel(write: (batch: readonly Delivery[]) => Promise<void>) {
  let written: Promise<unknown> = Promise.resolve();
  return (batch: readonly Delivery[]): Promise<DeliveryResult[]> => {
    const results = written.then(async (): Promise<DeliveryResult[]> => {
      try {
        await write(batch);
        return batch.map((delivery) => ({ delivery, result: ok() }));
      } catch (err) {
        return batch.map((delivery) => ({ delivery, result: failureOf(err) }));
      }
    });
    written = results;
    return results;
  };
}

describe("NatsEventBus under the processor's transport (two batches in flight)", () => {
  it.each([
    ['alone in its batch', ['flaky'], 1],
    ['in a batch that is split after the failure', ['other', 'flaky'], 2],
  ])(
    "stores an account's later message while its earlier one that failed transiently waits to be retried (%s)",
    async (_case, firstBatch, failures) => {
      const h = harness();
      const bus = await h.open({ retryBaseMs: 200, retryCapMs: 200 });
      const stored: string[] = [];
      let failuresLeft = failures;
      let laterHandedOver!: () => void;
      const laterArrived = new Promise<void>((resolve) => (laterHandedOver = resolve));
      const process = pipelineModel(async (batch) => {
        const ids = batch.map((d) => d.message.id);
        if (ids.includes('flaky') && failuresLeft > 0) {
          failuresLeft--;
          // The first attempt fails only once the next batch, with the account's later message, has
          // been handed over behind it: the window two batches in flight open.
          if (failuresLeft === failures - 1) await laterArrived;
          throw new Error('store timeout');
        }
        stored.push(...ids);
      });
      const transport = new BusTransport(bus);
      transport.addHandler(
        INGEST_PATTERN,
        (batch: readonly Delivery[]) => {
          if (batch.some((d) => d.message.id === 'later-A')) laterHandedOver();
          return process(batch);
        },
        true,
      );
      try {
        for (const id of firstBatch) await bus.publish(message(id, 1, id === 'other' ? 'acctB' : 'acctA'));
        transport.listen(() => undefined);
        // Published once the first batch is being written, so that it comes in the next fetch.
        await eventually(() => failuresLeft < failures, 10_000);
        await bus.publish(message('later-A', 1, 'acctA'));
        await eventually(() => stored.includes('flaky') && stored.includes('later-A'), 15_000);
        // Nothing held later-A back: it went while flaky waited out its backoff (200 ms), stored once each.
        expect(stored.filter((id) => id !== 'other')).toEqual(['later-A', 'flaky']);
        expect(await bus.deadLetterCount()).toBe(0);
      } finally {
        await transport.close();
        await h.cleanup();
      }
    },
  );
});
