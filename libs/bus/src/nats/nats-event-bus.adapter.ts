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
  type JetStreamManager,
  type JsMsg,
  type MsgRequest,
  type StoredMsg,
} from '@nats-io/jetstream';
import type { DriverHealth, IngestMessage } from '@cdp/contracts';
import type { BusBacklog } from '@cdp/metrics';
import { FAULT_POINTS, faultPoint } from '@cdp/faults';
import {
  BusUnavailableError,
  EventBus,
  type BatchConsumer,
  type DeadLetterObserver,
  type DeadLetter,
  type DeadLetterPage,
  type DeadLetterQuery,
  type Delivery,
  type EncodedMessage,
  type Settlement,
  decodeMessage,
  encodedMessageJson,
  REDELIVERY_HORIZON_MS,
} from '../event-bus.port.js';
import { DEFAULT_RETRY, RetryPolicy } from '../retry-policy.js';
import { decodeIngest, encodeIngest, encodeIngestText, type EncodedPart } from './ingest-message-payload.js';
import { Arrivals } from './arrivals.js';
import { degradedReplicas, placementRefusal } from './jetstream-cluster.js';

export interface NatsBusOptions {
  /** Replicas of each stream: 1 on a single server, 3 in a cluster. */
  replicas: number;
  /**
   * The ingest stream refuses new messages beyond this size (publishes then answer 503). JetStream
   * reserves it on every replica, out of each server's `max_file_store`.
   */
  maxBytes: number;
  /**
   * Failures of one message while others are being stored before it goes to the dead-letter stream
   * (retry-policy.ts: failures while the store is away do not count).
   */
  maxDeliveries?: number;
  /** Backoff of retried messages (defaults: DEFAULT_RETRY). */
  retryBaseMs?: number;
  retryCapMs?: number;
  /** How long a fetched message stays claimed without an ack or a sign of work (default 10 s). */
  ackWaitMs?: number;
  /** Messages held at once: arrived and waiting for the processor (arrivals.ts). */
  batchMessages?: number;
  /** At most this many records go to the consumer in one batch (whole messages only). */
  maxBatchRecords?: number;
  publishTimeoutMs?: number;
  streamPrefix?: string;
  /**
   * Whether the connection is up now. While it is not, `publish` refuses at once rather than leave the
   * message in the client's reconnect buffer, from where it could still reach JetStream after the
   * API answered 503 (and the client sent it again).
   */
  connected?: () => boolean;
  /** Told about failures the consumer loop survives (JetStream away, a failed fetch). */
  onConsumerError?: (err: unknown) => void;
  onDeadLetter?: DeadLetterObserver;
}

const nanos = (ms: number) => ms * 1_000_000;
const ACK_WAIT_MS = 10_000;

/** Chunks handed to the consumer before the oldest must be settled. */
const IN_FLIGHT = 2;
/** How long one pull request stays open at most (arrivals.ts): the client refuses less than a second. */
const FETCH_WAIT_MS = 1000;

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
  private readonly retry: RetryPolicy;
  private pausedUntil = 0;
  private consumerLoop: Promise<void> | undefined;
  private arrivals: Arrivals | undefined;
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
    this.retry = new RetryPolicy({
      maxStrikes: options.maxDeliveries ?? DEFAULT_RETRY.maxStrikes,
      baseMs: options.retryBaseMs ?? DEFAULT_RETRY.baseMs,
      capMs: options.retryCapMs ?? DEFAULT_RETRY.capMs,
    });
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
      max_age: nanos(REDELIVERY_HORIZON_MS),
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
        try {
          await jsm.streams.info(config.name);
          await jsm.streams.update(config.name, config);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          await jsm.streams.add(config);
        }
      } catch (err) {
        throw placementRefusal(
          err,
          config.name,
          config.num_replicas,
          'max_bytes' in config ? config.max_bytes : 0,
        );
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
    this.refuseWhileDisconnected();
    await this.publishParts(message, encodeIngest(message, this.maxPayload));
  }

  /**
   * The bytes `publish` would send, with the records' JSON spliced in as the API's codec thread wrote it:
   * the API's main thread neither parses nor re-encodes them. A message too large for one bus message
   * is split as `publish` splits it, which needs its records: that rare one is decoded.
   */
  override async publishEncoded(message: EncodedMessage): Promise<void> {
    this.refuseWhileDisconnected();
    const whole = encodeIngestText(message.head.id, encodedMessageJson(message), this.maxPayload);
    if (whole) await this.publishParts(message.head, [whole]);
    else await this.publish(decodeMessage(message));
  }

  private get maxPayload(): number {
    return this.nc.info?.max_payload ?? 1024 * 1024;
  }

  private refuseWhileDisconnected(): void {
    if (this.options.connected && !this.options.connected())
      throw new BusUnavailableError('the connection to NATS is down', 1);
  }

  private async publishParts(
    message: Pick<IngestMessage, 'account' | 'kind'>,
    parts: EncodedPart[],
  ): Promise<void> {
    const subject = `${this.subjectRoot}.${message.account}.${message.kind}`;
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
    const arrivals = new Arrivals(source, this.options.batchMessages ?? 32, FETCH_WAIT_MS, (err) =>
      this.options.onConsumerError?.(err),
    );
    this.arrivals = arrivals;
    // Up to IN_FLIGHT chunks are handed over before the first is settled: the consumer may overlap
    // them (the processor stores one batch while it resolves the next). Each is settled in turn.
    const inFlight: Promise<void>[] = [];
    // Every message this process holds, waiting in `arrivals` or handed over, stays claimed until it
    // is settled, however long it waits for its turn.
    const unsettled = new Set<JsMsg>();
    const claim = setInterval(
      () => {
        for (const m of unsettled) m.working();
        for (const m of arrivals.held()) m.working();
      },
      (this.options.ackWaitMs ?? ACK_WAIT_MS) / 3,
    );
    claim.unref(); // a loop that failed mid-batch must not keep the process alive through it
    try {
      while (!this.stopping) {
        // The store looks away: wait before taking more (what arrives meanwhile is held, and claimed).
        const pause = this.pausedUntil - Date.now();
        if (pause > 0 && !this.stopping) await sleep(pause);
        const batch = await arrivals.take();
        if (batch.length === 0) continue;
        for (const m of batch) unsettled.add(m);
        const release = (settled: JsMsg[]) => {
          for (const m of settled) unsettled.delete(m);
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
              sequence: m.seq,
            });
          } catch (err) {
            await this.deadLetter(m, `undecodable message: ${describe(err)}`);
            this.options.onDeadLetter?.(m.subject.slice(m.subject.lastIndexOf('.') + 1), 0);
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
    } finally {
      clearInterval(claim);
      // Arrived but not started: back to the stream at once, for another processor or the next start
      // (also when the loop failed: the pump must not go on fetching for nobody).
      for (const m of await arrivals.stop()) m.nak();
    }
  }

  /** Gives a chunk to the consumer, then settles its messages. */
  private async handOver(
    consumer: BatchConsumer,
    chunk: Delivery[],
    byHandle: Map<string, JsMsg>,
  ): Promise<void> {
    const token = this.retry.attempt();
    let settlements: Settlement[];
    try {
      settlements = await consumer(chunk);
    } catch (err) {
      settlements = chunk.map((delivery) => ({ delivery, outcome: 'retry', reason: describe(err) }));
    }
    await this.settle(settlements, byHandle, token);
  }

  /**
   * Acks and dead letters are final; a retried message goes back to the stream with its backoff as the
   * redelivery delay (retry-policy.ts has the rule). Nothing else waits for it: its account's later
   * messages are stored meanwhile, and the version guards (`acceptanceOrder`) keep the state in order.
   */
  private async settle(
    settlements: Settlement[],
    byHandle: Map<string, JsMsg>,
    token: number,
  ): Promise<void> {
    const key = (s: Settlement) => s.delivery.handle;
    const failed = (s: Settlement) => s.outcome === 'retry';
    const { decisions, pauseMs } = this.retry.settled(
      token,
      settlements.filter((s) => s.outcome === 'ack').map(key),
      settlements.filter(failed).map((s) => ({ key: key(s), account: s.delivery.message.account })),
    );
    if (pauseMs) this.pausedUntil = Date.now() + pauseMs;
    const final: Settlement[] = [];
    for (const s of settlements) {
      const m = byHandle.get(s.delivery.handle);
      if (!m) continue;
      const decision = decisions.get(key(s));
      if (s.outcome === 'retry' && decision && !decision.deadLetter) m.nak(decision.delayMs);
      else final.push(s);
    }
    // Acknowledgements go out together and are confirmed together: one round trip, not one per message.
    // Waiting for the server's confirmation: an ack lost here means one more (harmless) redelivery.
    const acks: Promise<unknown>[] = [];
    if (final.some((s) => s.outcome === 'ack')) faultPoint(FAULT_POINTS.busAck);
    for (const s of final) {
      const m = byHandle.get(s.delivery.handle)!;
      if (s.outcome === 'ack') {
        acks.push(m.ackAck().catch(() => false));
      } else {
        const decision = decisions.get(key(s));
        const firstFailedAt = decision?.firstFailedAt ?? this.retry.firstFailedAt(key(s));
        this.retry.forget(key(s));
        await this.deadLetter(m, s.reason, firstFailedAt);
        this.options.onDeadLetter?.(s.delivery.message.kind, s.delivery.message.records.length);
      }
    }
    await Promise.all(acks);
  }

  private async deadLetter(m: JsMsg, reason: string, firstFailedAt = Date.now()): Promise<void> {
    const h = natsHeaders();
    h.set('Cdp-Reason', reason.slice(0, 1000).replace(/[\r\n]+/g, ' '));
    h.set('Cdp-Deliveries', String(m.info.deliveryCount));
    h.set('Cdp-Subject', m.subject);
    h.set('Cdp-First-Failed-At', new Date(firstFailedAt).toISOString());
    if (m.headers?.get('Content-Encoding')) h.set('Content-Encoding', m.headers.get('Content-Encoding'));
    const subject = m.subject.replace('.ingest.', '.dead-letter.');
    await this.js.publish(subject, m.data, { headers: h, msgID: `dlq-${m.seq}` });
    await m.ackAck().catch(() => false);
  }

  private get deadSubjectRoot(): string {
    return this.subjectRoot.replace('.ingest', '.dead-letter');
  }

  async deadLetters(query: DeadLetterQuery): Promise<DeadLetterPage> {
    const jsm = await jetstreamManager(this.nc);
    const filter = `${this.deadSubjectRoot}.${query.account ? `${query.account}.>` : '>'}`;
    const items: DeadLetter[] = [];
    let seq = query.after === undefined ? 1 : Number(query.after) + 1;
    // One message per request ("next by subject"): dead letters are few, and this needs no consumer.
    for (;;) {
      const request = { seq, next_by_subj: filter } as unknown as MsgRequest;
      const stored = await jsm.streams.getMessage(this.dlqStream, request);
      if (!stored) return { items };
      if (items.length === query.limit) return { items, next: items[items.length - 1]!.id };
      items.push(deadLetterView(stored));
      seq = stored.seq + 1;
    }
  }

  async deadLetterCount(): Promise<number> {
    const jsm = await jetstreamManager(this.nc);
    return (await jsm.streams.info(this.dlqStream)).state.messages;
  }

  async replayDeadLetter(id: string): Promise<boolean> {
    const jsm = await jetstreamManager(this.nc);
    const stored = await jsm.streams.getMessage(this.dlqStream, { seq: Number(id) }).catch(() => null);
    if (!stored) return false;
    await this.replayStored(stored);
    await jsm.streams.deleteMessage(this.dlqStream, stored.seq);
    return true;
  }

  async replayDeadLetters(account: string): Promise<number> {
    let replayed = 0;
    let page = await this.deadLetters({ account, limit: 100 });
    for (;;) {
      for (const d of page.items) if (await this.replayDeadLetter(d.id)) replayed++;
      if (!page.next) return replayed;
      page = await this.deadLetters({ account, after: page.next, limit: 100 });
    }
  }

  /** Publishes the dead letter's bytes to its original subject; a fresh message id, so it is not deduplicated. */
  private async replayStored(stored: StoredMsg): Promise<void> {
    const h = natsHeaders();
    const encoding = stored.header?.get('Content-Encoding');
    if (encoding) h.set('Content-Encoding', encoding);
    const subject = stored.header?.get('Cdp-Subject') || stored.subject.replace('.dead-letter.', '.ingest.');
    try {
      await this.js.publish(subject, stored.data, {
        msgID: `replay-${stored.seq}-${stored.time.getTime()}`,
        headers: h,
        timeout: this.options.publishTimeoutMs ?? 5000,
      });
    } catch (err) {
      throw new BusUnavailableError(`JetStream did not acknowledge the replay: ${describe(err)}`, 1);
    }
  }

  async stopConsuming(): Promise<void> {
    this.stopping = true;
    this.arrivals?.interrupt();
    await this.consumerLoop;
    this.consumerLoop = undefined;
  }

  async health(): Promise<DriverHealth> {
    if (this.nc.isClosed()) return { driver: 'nats', ready: false, detail: 'connection closed' };
    try {
      const info = await (await jetstreamManager(this.nc, { timeout: 2000 })).streams.info(this.stream);
      const degraded = degradedReplicas(info.cluster);
      return {
        driver: 'nats',
        ready: true,
        detail: `${info.state.messages} message(s) pending${degraded ? `; degraded: ${degraded}` : ''}`,
      };
    } catch (err) {
      return { driver: 'nats', ready: false, detail: describe(err) };
    }
  }

  /** The shared consumer's view (every processor's), and the streams' sizes: three JetStream calls. */
  override async backlog(): Promise<BusBacklog> {
    const jsm = await (this.manager ??= jetstreamManager(this.nc, { timeout: 2000 }).catch((err: unknown) => {
      this.manager = undefined;
      throw err;
    }));
    const [consumer, ingest, dead] = await Promise.all([
      jsm.consumers.info(this.stream, 'processor'),
      jsm.streams.info(this.stream),
      jsm.streams.info(this.dlqStream),
    ]);
    return {
      pending: consumer.num_pending,
      inFlight: consumer.num_ack_pending,
      bytes: ingest.state.bytes,
      deadLetters: dead.state.messages,
    };
  }

  private manager: Promise<JetStreamManager> | undefined;

  async close(): Promise<void> {
    await this.stopConsuming();
  }
}

function deadLetterView(stored: StoredMsg): DeadLetter {
  const parts = stored.subject.split('.');
  let records = 0;
  let messageId = '';
  try {
    const message = decodeIngest(stored.data, stored.header?.get('Content-Encoding') === 'gzip');
    records = message.records.length;
    messageId = message.id;
  } catch {
    // an undecodable message is a dead letter too; it shows with no records
  }
  const at = stored.time.toISOString();
  return {
    id: String(stored.seq),
    account: parts[parts.length - 2] ?? '',
    kind: parts[parts.length - 1] ?? '',
    messageId,
    records,
    reason: stored.header?.get('Cdp-Reason') ?? '',
    firstFailedAt: stored.header?.get('Cdp-First-Failed-At') || at,
    deadLetteredAt: at,
    deliveries: Number(stored.header?.get('Cdp-Deliveries') || 1),
  };
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
