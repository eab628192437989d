import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type Consumer,
  type JetStreamClient,
  type JsMsg,
} from '@nats-io/jetstream';
import type { DriverHealth, IngestMessage } from '@cdp/contracts';
import { FAULT_POINTS, faultPoint } from '@cdp/faults';
import {
  BusUnavailableError,
  EventBus,
  type BatchConsumer,
  type Delivery,
  type Settlement,
} from '../event-bus.port.js';
import { decodeIngest, encodeIngest } from './ingest-codec.js';

export interface NatsBusOptions {
  /** Replicas of each stream: 1 on a single server, 3 in a cluster. */
  replicas: number;
  /** The ingest stream refuses new messages beyond this size (publishes then answer 503). */
  maxBytes: number;
  /** Deliveries of one message before it goes to the dead-letter stream. */
  maxDeliveries?: number;
  /** How long a fetched message stays claimed without an ack or a sign of work (default 10 s). */
  ackWaitMs?: number;
  /** Messages fetched at once. */
  batchMessages?: number;
  /** At most this many records go to the consumer in one batch (whole messages only). */
  maxBatchRecords?: number;
  publishTimeoutMs?: number;
  streamPrefix?: string;
  /** Told about failures the consumer loop survives (JetStream away, a failed fetch). */
  onConsumerError?: (err: unknown) => void;
}

const nanos = (ms: number) => ms * 1_000_000;
const ACK_WAIT_MS = 10_000;

/** Chunks handed to the consumer before the oldest must be settled. */
const IN_FLIGHT = 2;
const FETCH_WAIT_MS = 1000; // the client refuses less than a second

/**
 * The scaled-out bus on NATS JetStream. One stream takes every ingest message (work-queue retention,
 * file storage, deduplication on the request id); the processors share one durable pull consumer.
 * A message that keeps failing goes to the dead-letter stream with its reason.
 *
 * Limits: the ingest stream keeps a message until a processor acknowledges it, at most 7 days and at
 * most `maxBytes`; when full, publishing fails (discard new) and the API answers 503, so nothing
 * acknowledged is ever dropped to make room. Dead letters are kept 30 days.
 */
export class NatsEventBus extends EventBus {
  private readonly js: JetStreamClient;
  private readonly stream: string;
  private readonly dlqStream: string;
  private readonly maxDeliveries: number;
  private consumerLoop: Promise<void> | undefined;
  private stopping = false;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly options: NatsBusOptions,
  ) {
    super();
    this.js = jetstream(nc);
    const prefix = options.streamPrefix ?? 'CDP';
    this.stream = `${prefix}_INGEST`;
    this.dlqStream = `${prefix}_DEAD_LETTER`;
    this.maxDeliveries = options.maxDeliveries ?? 5;
  }

  private get subjectRoot(): string {
    return this.stream.toLowerCase().replace('_ingest', '.ingest');
  }

  /** Connects and creates or updates the streams and the consumer: running it again changes nothing. */
  static async open(nc: NatsConnection, options: NatsBusOptions): Promise<NatsEventBus> {
    const bus = new NatsEventBus(nc, options);
    await bus.ensureTopology();
    return bus;
  }

  private async ensureTopology(): Promise<void> {
    const jsm = await jetstreamManager(this.nc);
    const ingest = {
      name: this.stream,
      subjects: [`${this.subjectRoot}.>`],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      discard: DiscardPolicy.New,
      max_bytes: this.options.maxBytes,
      max_age: nanos(7 * 24 * 3600 * 1000),
      duplicate_window: nanos(2 * 60 * 1000),
      num_replicas: this.options.replicas,
    };
    const dead = {
      name: this.dlqStream,
      subjects: [`${this.subjectRoot.replace('.ingest', '.dead-letter')}.>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: nanos(30 * 24 * 3600 * 1000),
      num_replicas: this.options.replicas,
    };
    for (const config of [ingest, dead]) {
      try {
        await jsm.streams.info(config.name);
        await jsm.streams.update(config.name, config);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await jsm.streams.add(config);
      }
    }
    const consumer = {
      durable_name: 'processor',
      ack_policy: AckPolicy.Explicit,
      // Past this without an ack, a message goes to another processor (or the restarted one): short,
      // so a crashed processor's batch is retried soon; a slow batch keeps its claim with `working()`.
      ack_wait: nanos(this.options.ackWaitMs ?? ACK_WAIT_MS),
      max_ack_pending: 10_000,
    };
    try {
      await jsm.consumers.info(this.stream, consumer.durable_name);
      await jsm.consumers.update(this.stream, consumer.durable_name, consumer);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await jsm.consumers.add(this.stream, consumer);
    }
  }

  async publish(message: IngestMessage): Promise<void> {
    const subject = `${this.subjectRoot}.${message.account}.${message.kind}`;
    const parts = encodeIngest(message, this.nc.info?.max_payload ?? 1024 * 1024);
    try {
      for (const part of parts) {
        const h = natsHeaders();
        if (part.gzip) h.set('Content-Encoding', 'gzip');
        // The message id makes a re-published request a no-op inside the duplicate window.
        await this.js.publish(subject, part.data, {
          msgID: part.id,
          headers: h,
          timeout: this.options.publishTimeoutMs ?? 5000,
        });
      }
    } catch (err) {
      throw new BusUnavailableError(`JetStream did not acknowledge the message: ${describe(err)}`, 1);
    }
  }

  consume(consumer: BatchConsumer): void {
    if (this.consumerLoop) throw new Error('this bus already has a consumer');
    this.stopping = false;
    this.consumerLoop = this.run(consumer);
  }

  private async run(consumer: BatchConsumer): Promise<void> {
    const source: Consumer = await this.js.consumers.get(this.stream, 'processor');
    // Up to IN_FLIGHT chunks are handed over before the first is settled: the consumer may overlap
    // them (the processor stores one batch while it resolves the next). Each is settled in turn.
    const inFlight: Promise<void>[] = [];
    // The next fetch runs while this one's chunks are processed, so the consumer never waits for the
    // network between two fetches.
    let next = this.fetch(source);
    while (!this.stopping) {
      const batch = await next;
      next = this.stopping ? Promise.resolve([]) : this.fetch(source);
      if (batch.length === 0) continue;
      // Every fetched message stays claimed until it is settled, however long it waits for its turn.
      const unsettled = new Set(batch);
      const claim = setInterval(
        () => unsettled.forEach((m) => m.working()),
        (this.options.ackWaitMs ?? ACK_WAIT_MS) / 3,
      );
      claim.unref(); // a loop that failed mid-batch must not keep the process alive through it
      const release = (settled: JsMsg[]) => {
        for (const m of settled) unsettled.delete(m);
        if (unsettled.size === 0) clearInterval(claim);
      };
      const deliveries: Delivery[] = [];
      const byHandle = new Map<string, JsMsg>();
      for (const m of batch) {
        const handle = String(m.seq);
        byHandle.set(handle, m);
        try {
          deliveries.push({
            handle,
            message: decodeIngest(m.data, m.headers?.get('Content-Encoding') === 'gzip'),
            deliveryCount: m.info.deliveryCount,
          });
        } catch (err) {
          await this.deadLetter(m, `undecodable message: ${describe(err)}`);
          release([m]);
        }
      }
      for (const chunk of byRecords(deliveries, this.options.maxBatchRecords ?? 10_000)) {
        const messages = chunk.map((d) => byHandle.get(d.handle)!);
        inFlight.push(this.handOver(consumer, chunk, byHandle).finally(() => release(messages)));
        if (inFlight.length >= IN_FLIGHT) await inFlight.shift();
      }
    }
    await Promise.all(inFlight);
    // Fetched ahead but not started: back to the stream at once, for another processor or the next start.
    for (const m of await next) m.nak();
  }

  /** One fetch; an empty batch when it expired or JetStream is away (the loop keeps trying). */
  private async fetch(source: Consumer): Promise<JsMsg[]> {
    const batch: JsMsg[] = [];
    try {
      // A fetch returns once it has max_messages or when it expires: under load the first, when
      // traffic is light the second, which bounds how long a lone message waits for company.
      const messages = await source.fetch({
        max_messages: this.options.batchMessages ?? 32,
        expires: FETCH_WAIT_MS,
      });
      for await (const m of messages) batch.push(m);
      return batch;
    } catch (err) {
      if (this.stopping) return batch;
      // JetStream away (restart, network): keep trying; unacknowledged messages wait in the stream.
      this.options.onConsumerError?.(err);
      await sleep(500);
      return batch;
    }
  }

  /** Gives a chunk to the consumer, then settles its messages. */
  private async handOver(
    consumer: BatchConsumer,
    chunk: Delivery[],
    byHandle: Map<string, JsMsg>,
  ): Promise<void> {
    let settlements: Settlement[];
    try {
      settlements = await consumer(chunk);
    } catch (err) {
      settlements = chunk.map((delivery) => ({ delivery, outcome: 'retry', reason: describe(err) }));
    }
    await this.settle(settlements, byHandle);
  }

  private async settle(settlements: Settlement[], byHandle: Map<string, JsMsg>): Promise<void> {
    // Acknowledgements go out together and are confirmed together: one round trip, not one per message.
    // Waiting for the server's confirmation: an ack lost here means one more (harmless) redelivery.
    const acks: Promise<unknown>[] = [];
    if (settlements.some((s) => s.outcome === 'ack')) faultPoint(FAULT_POINTS.busAck);
    for (const s of settlements) {
      const m = byHandle.get(s.delivery.handle);
      if (!m) continue;
      if (s.outcome === 'ack') {
        acks.push(m.ackAck().catch(() => false));
      } else if (s.outcome === 'retry' && s.delivery.deliveryCount < this.maxDeliveries) {
        m.nak(Math.min(100 * 2 ** s.delivery.deliveryCount, 10_000));
      } else {
        await this.deadLetter(m, s.reason);
      }
    }
    await Promise.all(acks);
  }

  private async deadLetter(m: JsMsg, reason: string): Promise<void> {
    const h = natsHeaders();
    h.set('Cdp-Reason', reason.slice(0, 1000).replace(/[\r\n]+/g, ' '));
    h.set('Cdp-Deliveries', String(m.info.deliveryCount));
    h.set('Cdp-Subject', m.subject);
    if (m.headers?.get('Content-Encoding')) h.set('Content-Encoding', m.headers.get('Content-Encoding'));
    const subject = m.subject.replace('.ingest.', '.dead-letter.');
    await this.js.publish(subject, m.data, { headers: h, msgID: `dlq-${m.seq}` });
    await m.ackAck().catch(() => false);
  }

  async stopConsuming(): Promise<void> {
    this.stopping = true;
    await this.consumerLoop;
    this.consumerLoop = undefined;
  }

  async health(): Promise<DriverHealth> {
    if (this.nc.isClosed()) return { driver: 'nats', ready: false, detail: 'connection closed' };
    try {
      const info = await (await jetstreamManager(this.nc, { timeout: 2000 })).streams.info(this.stream);
      return { driver: 'nats', ready: true, detail: `${info.state.messages} message(s) pending` };
    } catch (err) {
      return { driver: 'nats', ready: false, detail: describe(err) };
    }
  }

  async close(): Promise<void> {
    await this.stopConsuming();
  }
}

/** Splits deliveries into runs of whole messages holding at most `max` records each. */
function byRecords(deliveries: Delivery[], max: number): Delivery[][] {
  const chunks: Delivery[][] = [];
  let current: Delivery[] = [];
  let records = 0;
  for (const d of deliveries) {
    const n = d.message.records.length;
    if (current.length && records + n > max) {
      chunks.push(current);
      current = [];
      records = 0;
    }
    current.push(d);
    records += n;
  }
  if (current.length) chunks.push(current);
  return chunks;
}

function isNotFound(err: unknown): boolean {
  const e = err as { code?: string | number; api_error?: { err_code?: number }; message?: string };
  return (
    e.api_error?.err_code === 10059 || e.api_error?.err_code === 10014 || /not found/i.test(e.message ?? '')
  );
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
