import type { EventsMessage, IngestMessage } from '@cdp/contracts';
import { BusUnavailableError, type Delivery, type EventBus, type Settlement } from './event-bus.port.js';
import { eventually } from '../../../test/support/eventually.js';

/**
 * The behaviour every EventBus driver owes the API and the processor. A driver's spec calls this
 * with a factory; `open` may be called again on the same `place` to model a restart.
 */
/** The limits a test may set when it opens a bus (each driver's own defaults otherwise). */
export interface BusTestOptions {
  maxPendingBytes?: number;
  maxBatchRecords?: number;
  maxDeliveries?: number;
  retryBaseMs?: number;
  retryCapMs?: number;
}

export interface BusHarness {
  open(options?: BusTestOptions): Promise<EventBus>;
  /** Removes what the harness created (streams, files); called after each test. */
  cleanup?(): Promise<void>;
}

export function message(id: string, records = 1, account = 'acct1'): IngestMessage {
  return {
    id,
    account,
    kind: 'events',
    receivedAt: Date.now(),
    records: Array.from({ length: records }, (_, i) => ({
      type: 'pageview',
      action: '',
      ts: Date.now(),
      channel: 'offline',
      identifiers: { vuid: `v${i}` },
      data: { page: `/p${i}` },
    })),
  };
}

/** Collects deliveries until `count` messages arrived, settling each with `settle`. */
export function collector(settle: (d: Delivery) => Settlement['outcome'] = () => 'ack') {
  const seen: Delivery[] = [];
  const acked: Delivery[] = [];
  const batches: number[] = [];
  const consumer = (batch: readonly Delivery[]): Promise<Settlement[]> => {
    batches.push(batch.length);
    seen.push(...batch);
    return Promise.resolve(
      batch.map((delivery): Settlement => {
        const outcome = settle(delivery);
        if (outcome === 'ack') acked.push(delivery);
        return outcome === 'ack' ? { delivery, outcome } : { delivery, outcome, reason: 'test says so' };
      }),
    );
  };
  return { seen, acked, batches, consumer };
}

export function eventBusContract(name: string, makeHarness: () => BusHarness): void {
  describe(`EventBus contract: ${name}`, () => {
    const made: BusHarness[] = [];
    const harness = (): BusHarness => {
      const h = makeHarness();
      made.push(h);
      return h;
    };
    afterEach(async () => {
      for (const h of made.splice(0)) await h.cleanup?.();
    });

    it('delivers every published message once, in order, after publish resolved', async () => {
      const bus = await harness().open();
      const c = collector();
      bus.consume(c.consumer);
      await Promise.all(Array.from({ length: 50 }, (_, i) => bus.publish(message(`m${i}`))));
      await eventually(() => c.seen.length === 50);
      expect(c.seen.map((d) => d.message.id)).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`));
      expect(c.seen.every((d) => d.deliveryCount === 1)).toBe(true);
      await bus.close();
    });

    it('delivers a message published encoded as the message it stands for, also after a restart', async () => {
      const h = harness();
      const first = await h.open();
      const plain = message('plain', 2);
      const { records: ascii, ...head } = message('encoded', 3) as EventsMessage;
      // Text past ASCII: the log and NATS take the records' text as UTF-8 bytes.
      const records = ascii.map((r, i) => ({ ...r, data: { ...r.data, title: `Zoë’s basket 🛒 ${i}` } }));
      const encoded = {
        head: { ...head, resend: true as const },
        count: 3,
        recordsJson: JSON.stringify(records),
      };
      await first.publish(plain);
      await first.publishEncoded(encoded);
      const c1 = collector();
      first.consume(c1.consumer);
      await eventually(() => c1.seen.length === 2);
      expect(c1.seen.map((d) => d.message)).toEqual([plain, { ...head, resend: true, records }]);
      await first.stopConsuming();
      // Never settled before the stop: read back from the log after a restart, whole.
      await first.publishEncoded({ ...encoded, head: { ...head, id: 'owed' } });
      await first.close();
      const second = await h.open();
      const c2 = collector();
      second.consume(c2.consumer);
      await eventually(() => c2.seen.length === 1);
      expect(c2.seen[0]!.message).toEqual({ ...head, id: 'owed', records });
      await second.close();
    });

    it('redelivers what was never settled after a restart, and not what was acknowledged', async () => {
      const h = harness();
      const first = await h.open();
      await first.publish(message('acked'));
      const c1 = collector();
      first.consume(c1.consumer);
      await eventually(() => c1.seen.length === 1);
      await first.stopConsuming();
      await first.publish(message('pending'));
      await first.close();

      const second = await h.open();
      const c2 = collector();
      second.consume(c2.consumer);
      await eventually(() => c2.seen.length === 1);
      expect(c2.seen[0]!.message.id).toBe('pending');
      expect(c2.seen[0]!.deliveryCount).toBeGreaterThanOrEqual(1);
      // A message published now comes after anything still owed (one account keeps its order): once
      // it arrived, the acknowledged one was not delivered again.
      await second.publish(message('sentinel'));
      await eventually(() => c2.seen.some((d) => d.message.id === 'sentinel'));
      expect(c2.seen.map((d) => d.message.id)).toEqual(['pending', 'sentinel']);
      await second.close();
    });

    it('numbers messages in acceptance order; a redelivery carries the same number', async () => {
      const bus = await harness().open({ retryBaseMs: 20, retryCapMs: 50 });
      let failuresLeft = 1;
      const c = collector((d) => (d.message.id === 's2' && failuresLeft-- > 0 ? 'retry' : 'ack'));
      bus.consume(c.consumer);
      for (let i = 0; i < 5; i++) await bus.publish(message(`s${i}`));
      await eventually(() => c.acked.length === 5);
      // Every delivery of a message (a retried one too) carries its number: the processor's version guards
      // order records by it, not by when they arrive.
      const numbers = new Map<string, Set<number>>();
      for (const d of c.seen)
        numbers.set(d.message.id, (numbers.get(d.message.id) ?? new Set()).add(d.sequence));
      expect([...numbers.values()].every((n) => n.size === 1)).toBe(true);
      expect(c.seen.filter((d) => d.message.id === 's2').length).toBeGreaterThan(1);
      const sequences = ['s0', 's1', 's2', 's3', 's4'].map((id) => [...numbers.get(id)!][0]!);
      expect(sequences.every((s, i) => Number.isInteger(s) && (i === 0 || s > sequences[i - 1]!))).toBe(true);
      await bus.close();
    });

    it('dead-letters a deterministic failure at once, with its reason and account', async () => {
      const bus = await harness().open();
      const c = collector((d) => (d.message.id === 'poison' ? 'dead-letter' : 'ack'));
      bus.consume(c.consumer);
      await bus.publish(message('poison', 3, 'acctP'));
      await bus.publish(message('fine'));
      await eventually(() => c.acked.length === 1);
      await eventually(() => c.seen.length === 2);
      const page = await eventually(async () => {
        const p = await bus.deadLetters({ limit: 10 });
        return p.items.length === 1 && p;
      });
      expect(page.items[0]).toMatchObject({
        account: 'acctP',
        kind: 'events',
        messageId: 'poison',
        records: 3,
        reason: 'test says so',
        deliveries: 1,
      });
      expect(Date.parse(page.items[0]!.firstFailedAt)).not.toBeNaN();
      expect(await bus.deadLetterCount()).toBe(1);
      // A later message of the same account is delivered; the dead letter is not delivered again.
      await bus.publish(message('after', 1, 'acctP'));
      await eventually(() => c.seen.some((d) => d.message.id === 'after'));
      expect(c.seen.filter((d) => d.message.id === 'poison')).toHaveLength(1);
      await bus.close();
    });

    it('dead-letters a message that keeps failing while others are stored', async () => {
      const bus = await harness().open({ maxDeliveries: 3, retryBaseMs: 20, retryCapMs: 50 });
      const c = collector((d) => (d.message.id === 'poison' ? 'retry' : 'ack'));
      bus.consume(c.consumer);
      await bus.publish(message('poison', 1, 'acctP'));
      // Other accounts' messages keep being stored: the failures are this message's own.
      for (let i = 0; (await bus.deadLetterCount()) === 0; i++) {
        if (i > 400) throw new Error('the failing message was never dead-lettered');
        await bus.publish(message(`fine${i}`, 1, `acct${i % 3}`));
        await new Promise((r) => setTimeout(r, 25));
      }
      const poison = c.seen.filter((d) => d.message.id === 'poison');
      expect(poison.length).toBeGreaterThanOrEqual(3);
      const [dead] = (await bus.deadLetters({ limit: 10 })).items;
      expect(dead).toMatchObject({ account: 'acctP', messageId: 'poison', reason: 'test says so' });
      await bus.close();
    });

    it("retries a transient failure after its backoff and holds nothing back behind it, its own account's later messages included", async () => {
      // The backoff is longer than a fetch can wait, so "before the retry" means "not held up".
      const bus = await harness().open({ retryBaseMs: 2500, retryCapMs: 2500 });
      let failuresLeft = 1;
      const c = collector((d) => (d.message.id === 'flaky' && failuresLeft-- > 0 ? 'retry' : 'ack'));
      bus.consume(c.consumer);
      await bus.publish(message('flaky', 1, 'acctA'));
      await eventually(() => c.seen.length === 1);
      await bus.publish(message('later-A', 1, 'acctA'));
      await bus.publish(message('b1', 1, 'acctB'));
      await bus.publish(message('b2', 1, 'acctB'));
      await eventually(() => c.acked.length === 4, 15_000);
      const order = c.seen.map((d) => d.message.id);
      const retryAt = order.lastIndexOf('flaky');
      expect(retryAt).toBeGreaterThan(0);
      // Everything else went while the failed message waited out its backoff, its own account's later
      // message too (order is the processor's version guards' business, by \`sequence\`) ...
      for (const id of ['later-A', 'b1', 'b2']) expect(order.indexOf(id)).toBeLessThan(retryAt);
      // ... and the failed one was delivered again, once, with its own number.
      expect(c.seen.filter((d) => d.message.id === 'flaky')).toHaveLength(2);
      expect(new Set(c.seen.filter((d) => d.message.id === 'flaky').map((d) => d.sequence)).size).toBe(1);
      expect(await bus.deadLetterCount()).toBe(0);
      await bus.close();
    });

    it('never dead-letters while everything fails (the store is away), and stores all once it is back', async () => {
      const bus = await harness().open({ maxDeliveries: 2, retryBaseMs: 20, retryCapMs: 100 });
      let away = true;
      const c = collector(() => (away ? 'retry' : 'ack'));
      bus.consume(c.consumer);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        ids.push(`m${i}`);
        await bus.publish(message(`m${i}`, 1, `acct${i % 3}`));
      }
      await eventually(() => c.seen.length >= 36, 30_000);
      expect(await bus.deadLetterCount()).toBe(0);
      away = false;
      await eventually(() => new Set(c.acked.map((d) => d.message.id)).size === 12, 30_000);
      expect(await bus.deadLetterCount()).toBe(0);
      // Each stored once.
      expect(c.acked.map((d) => d.message.id).sort()).toEqual([...ids].sort());
      await bus.close();
    });

    it('lists dead letters by account with paging, and replays one or all of an account', async () => {
      const bus = await harness().open();
      let rejecting = true;
      const c = collector((d) => (rejecting && d.message.id.startsWith('bad') ? 'dead-letter' : 'ack'));
      bus.consume(c.consumer);
      await bus.publish(message('bad-a1', 2, 'acctA'));
      await bus.publish(message('bad-b1', 1, 'acctB'));
      await bus.publish(message('bad-a2', 1, 'acctA'));
      await eventually(() => c.seen.length === 3);
      await eventually(async () => (await bus.deadLetterCount()) === 3);
      const first = await bus.deadLetters({ account: 'acctA', limit: 1 });
      expect(first.items.map((d) => d.messageId)).toEqual(['bad-a1']);
      expect(first.next).toBeDefined();
      const second = await bus.deadLetters({ account: 'acctA', after: first.next, limit: 1 });
      expect(second.items.map((d) => d.messageId)).toEqual(['bad-a2']);
      expect(second.next).toBeUndefined();

      rejecting = false;
      expect(await bus.replayDeadLetter(first.items[0]!.id)).toBe(true);
      expect(await bus.replayDeadLetter(first.items[0]!.id)).toBe(false);
      await eventually(() => c.acked.some((d) => d.message.id === 'bad-a1'));
      expect(c.acked.find((d) => d.message.id === 'bad-a1')!.message.records).toHaveLength(2);
      expect(await bus.deadLetterCount()).toBe(2);
      expect(await bus.replayDeadLetters('acctB')).toBe(1);
      await eventually(() => c.acked.some((d) => d.message.id === 'bad-b1'));
      const left = await bus.deadLetters({ limit: 10 });
      expect(left.items.map((d) => d.messageId)).toEqual(['bad-a2']);
      await bus.close();
    });

    it('keeps dead letters across a restart, and replays them after it', async () => {
      const h = harness();
      const first = await h.open();
      first.consume(collector(() => 'dead-letter').consumer);
      await first.publish(message('kept', 1, 'acctK'));
      await eventually(async () => (await first.deadLetterCount()) === 1);
      await first.close();

      const second = await h.open();
      expect(await second.deadLetterCount()).toBe(1);
      const [kept] = (await second.deadLetters({ account: 'acctK', limit: 10 })).items;
      expect(kept).toMatchObject({ messageId: 'kept', account: 'acctK', reason: 'test says so' });
      const c = collector();
      second.consume(c.consumer);
      expect(await second.replayDeadLetter(kept!.id)).toBe(true);
      await eventually(() => c.acked.some((d) => d.message.id === 'kept'));
      expect(await second.deadLetterCount()).toBe(0);
      await second.close();
    });

    it('reports a delivered message as pending in its health until it is settled', async () => {
      // Whoever waits for "0 message(s) pending" before a clean stop (an operator, a test) must not
      // stop while a batch is still being processed: JetStream's work queue counts it until its ack.
      const bus = await harness().open();
      const pendingNow = async () => Number(/^(\d+) message/.exec((await bus.health()).detail ?? '')?.[1]);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const seen: string[] = [];
      bus.consume(async (batch) => {
        seen.push(...batch.map((d) => d.message.id));
        await held;
        return batch.map((delivery): Settlement => ({ delivery, outcome: 'ack' }));
      });
      await bus.publish(message('h1'));
      await bus.publish(message('h2'));
      await eventually(() => seen.length > 0);
      expect(await pendingNow()).toBe(2);
      release();
      await eventually(async () => (await pendingNow()) === 0);
      expect(seen).toEqual(['h1', 'h2']);
      await bus.close();
    });

    it('hands over whole messages in batches bounded by their record count', async () => {
      const bus = await harness().open({ maxBatchRecords: 25 });
      for (let i = 0; i < 6; i++) await bus.publish(message(`b${i}`, 10));
      const c = collector();
      bus.consume(c.consumer);
      await eventually(() => c.seen.length === 6);
      expect(Math.max(...c.batches)).toBeLessThanOrEqual(2);
      await bus.close();
    });

    it('refuses to publish, with a retry hint, when it holds too much unprocessed data', async () => {
      const bus = await harness().open({ maxPendingBytes: 2000 });
      await bus.publish(message('a', 5));
      await bus.publish(message('b', 5));
      const refused = await bus.publish(message('c', 5)).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(BusUnavailableError);
      expect((refused as BusUnavailableError).retryAfterSeconds).toBeGreaterThan(0);
      await bus.close();
    });
  });
}
