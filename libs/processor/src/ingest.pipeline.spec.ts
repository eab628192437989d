import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  BusTransport,
  ok,
  type BatchConsumer,
  type Delivery,
  type DeliveryResult,
  type EventBus,
  type Settlement,
} from '@cdp/bus';
import { MemoryConsentState, MemoryIdentifierState } from '@cdp/consent/memory';
import { INGEST_PATTERN, type IngestMessage } from '@cdp/contracts';
import { MemoryIdentityIndex, MemoryProfileState } from '@cdp/identity/memory';
import { MemoryOrderState } from '@cdp/orders/memory';
import type { AnalyticStore, ClickHouseStore } from '@cdp/store';
import type { CustomColumns } from './custom-columns.service.js';
import type { IdentityStep } from './identity.step.js';
import { IngestPipeline } from './ingest.pipeline.js';
import type { ObjectsWriter } from './objects.writer.js';
import type { IdentifierUpdatesStep } from './identifier-updates.step.js';
import type { OptOutStep } from './optout.step.js';
import type { OrdersStep } from './orders.step.js';
import type { ProductsStep } from './products.step.js';
import type { SubscriptionsStep } from './subscriptions.step.js';
import { StepWriter } from './step-writer.js';
import { newProcessor, deliveryOf, eventsMessage, tempChdbStore } from './testing/processor-harness.js';
import { eventually } from '../../../test/support/eventually.js';

/** A value the store can never take: what a deterministic store error says of itself. */
class Unstorable extends Error {
  readonly deterministic = true;
}

function delivery(id: string, account: string): Delivery {
  const message: IngestMessage = {
    id,
    account,
    kind: 'profiles',
    receivedAt: Date.now(),
    records: [{ identifiers: { customer_id: id }, attributes: { first_name: id } }],
  } as unknown as IngestMessage;
  return { handle: id, message, deliveryCount: 1, sequence: 1 };
}

/**
 * The pipeline with its steps reduced to what orders writes: the store write of an account records
 * the messages it stored, and fails for the poisoned account. Driven through the real BusTransport.
 */
function harness() {
  const stored: string[] = [];
  const identity = {
    run: ({ items }: { items: readonly unknown[] }) =>
      Promise.resolve(
        ok({
          resolutions: items.map(() => ({
            customerId: 'c',
            created: false,
            linked: [],
            merged: [],
            conflicts: [],
          })),
        }),
      ),
    addEffectRows: () => undefined,
    redactOptedOut: () => undefined,
    applyProfiles: () => Promise.resolve([]),
    settle: (_account: string, messages: readonly { id: string }[]) => {
      stored.push(...messages.map((m) => m.id));
      return Promise.resolve();
    },
  };
  const columns = {
    // Slow enough that the next batch is handed over while this one is being written.
    prepare: async (account: string) => {
      await new Promise((r) => setTimeout(r, 20));
      if (account === 'poisoned') throw new Unstorable('cannot parse');
      if (account === 'flaky') throw new Error('timeout');
    },
  };
  const store = {
    begin: () => Promise.resolve(),
    write: () => Promise.resolve(),
    commit: () => Promise.resolve(),
    redactCustomers: () => Promise.resolve(),
  } as unknown as AnalyticStore;
  const pipeline = new IngestPipeline(
    identity as unknown as IdentityStep,
    store,
    columns as unknown as CustomColumns,
    {} as ObjectsWriter,
    {} as SubscriptionsStep,
    { run: () => Promise.resolve(ok({})) } as unknown as OrdersStep,
    { run: () => Promise.resolve(ok({})) } as unknown as ProductsStep,
    {
      run: () => Promise.resolve(ok({ rows: { customers: [] }, redact: ['c'] })),
    } as unknown as OptOutStep,
    new StepWriter(store, identity as unknown as IdentityStep),
    {} as IdentifierUpdatesStep,
  );
  let consumer: BatchConsumer | undefined;
  const bus = { consume: (c: BatchConsumer) => (consumer = c) } as unknown as EventBus;
  const transport = new BusTransport(bus);
  transport.addHandler(INGEST_PATTERN, (batch: readonly Delivery[]) => pipeline.process(batch), true);
  transport.listen(() => undefined);
  return { stored, consume: (batch: Delivery[]) => consumer!(batch) };
}

describe('IngestPipeline under the bus transport', () => {
  it('dead-letters a poisoned message alone; the batch after it is stored meanwhile, and the rest of the failed batch once', async () => {
    const h = harness();
    // Two batches in flight at once, as the NATS driver hands them over; the first holds poison.
    const first = h.consume([delivery('p1', 'poisoned'), delivery('a1', 'acct')]);
    const second = h.consume([delivery('a2', 'acct')]);
    const [s1, s2] = await Promise.all([first, second]);
    const outcome = (s: Settlement[]) => Object.fromEntries(s.map((x) => [x.delivery.message.id, x.outcome]));
    expect(outcome(s1)).toEqual({ p1: 'dead-letter', a1: 'ack' });
    expect(outcome(s2)).toEqual({ a2: 'ack' });
    // a2's batch writes right after the failed one (nothing holds it back), then the failed batch's
    // messages are tried one by one: a1 is stored once, after a2.
    expect(h.stored).toEqual(['a2', 'a1']);
  });

  it('retries a transient failure, costing the rest of its batch one more attempt only', async () => {
    const h = harness();
    const s = await h.consume([delivery('f1', 'flaky'), delivery('b1', 'acct'), delivery('b2', 'other')]);
    expect(Object.fromEntries(s.map((x) => [x.delivery.message.id, x.outcome]))).toEqual({
      f1: 'retry',
      b1: 'ack',
      b2: 'ack',
    });
    expect(h.stored).toEqual(['b1', 'b2']);
  });

  it('settles an opt-out like any message once stored: its redaction in Redis is waited onto a replica', async () => {
    const h = harness();
    const optout = delivery('o1', 'acct');
    (optout.message as { kind: string }).kind = 'optout';
    const s = await h.consume([optout]);
    expect(s.map((x) => x.outcome)).toEqual(['ack']);
    expect(h.stored).toEqual(['o1']);
  });
});

/** A promise the test settles. */
function gate(): { promise: Promise<void>; open: () => void; fail: (err: Error) => void } {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/**
 * The pipeline on real embedded drivers and chDB (testing/processor-harness.ts). The store in front
 * of chDB only reports each write (the messages whose events it carries) and may hold it at a gate
 * the test opens or fails; the write itself is chDB's.
 */
describe('IngestPipeline on the embedded drivers and chDB', () => {
  let chdb: ClickHouseStore;
  beforeAll(() => {
    chdb = tempChdbStore('pipeline');
  });
  afterAll(() => chdb.close());

  let n = 0;
  async function harnessOnChdb() {
    const writes: string[][] = [];
    const gates = new Map<string, Promise<void>>();
    const store = new Proxy(chdb, {
      get(target, prop) {
        if (prop === 'write') {
          return async (...args: Parameters<ClickHouseStore['write']>) => {
            const ids = [...new Set([...args[1].events, ...(args[1].customers ?? [])].map((e) => e.msg_id))];
            writes.push(ids);
            for (const id of ids) await gates.get(id);
            return target.write(...args);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const built = await newProcessor(store);
    const resolved: string[] = [];
    const resolve = built.identityStep.run.bind(built.identityStep);
    built.identityStep.run = (input) => {
      resolved.push(...new Set(input.items.map((i) => i.message.id)));
      return resolve(input);
    };
    const account = `acct${++n}${Date.now()}`;
    const event = (vuid: string) =>
      deliveryOf(eventsMessage(account, [{ type: 'pageview', identifiers: { vuid } }]));
    const stored = async () =>
      (
        await chdb.query<{ msg_id: string; n: number | string }>(
          account,
          'SELECT msg_id, count() AS n FROM {db}.events GROUP BY msg_id ORDER BY msg_id',
        )
      ).map((r) => [r.msg_id, Number(r.n)]);
    return { ...built, writes, gates, resolved, account, event, stored };
  }
  const outcomes = (s: DeliveryResult[]) => s.map((x) => x.result.type);

  it('resolves batch N+1 while batch N is written, and writes them in arrival order', async () => {
    const h = await harnessOnChdb();
    const [d1, d2, d3] = [h.event('v1'), h.event('v2'), h.event('v1')];
    const held = gate();
    h.gates.set(d1.message.id, held.promise);
    const processed = [h.pipeline.process([d1]), h.pipeline.process([d2]), h.pipeline.process([d3])];
    // Batch 1's write is held; batches 2 and 3 are resolved meanwhile, and none of them writes first.
    // (Batch 1 opens its bracket of store writes before it reaches the held write: wait for both.)
    await eventually(() => h.resolved.length === 3 && h.writes.length > 0);
    expect(h.resolved).toEqual([d1.message.id, d2.message.id, d3.message.id]);
    expect(h.writes).toEqual([[d1.message.id]]);
    held.open();
    expect((await Promise.all(processed)).map(outcomes)).toEqual([['ok'], ['ok'], ['ok']]);
    expect(h.writes).toEqual([[d1.message.id], [d2.message.id], [d3.message.id]]);
    expect(await h.stored()).toEqual(
      [d1, d2, d3].map((d) => [d.message.id, 1]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
  });

  it('fails a batch whose write fails, as a result; the batch behind it is stored meanwhile, the failed one once again', async () => {
    const h = await harnessOnChdb();
    const [d1, d2] = [h.event('f1'), h.event('f2')];
    const held = gate();
    h.gates.set(d1.message.id, held.promise);
    const first = h.pipeline.process([d1]);
    const second = h.pipeline.process([d2]);
    await eventually(() => h.resolved.length === 2);
    held.fail(new Error('store timeout'));
    // A plain error is transient: the batch's delivery is to be retried, with the error as the reason.
    expect((await first).map((x) => x.result)).toEqual([{ type: 'retry', reason: 'Error: store timeout' }]);
    expect(outcomes(await second)).toEqual(['ok']);
    expect(await h.stored()).toEqual([[d2.message.id, 1]]);
    // Redelivered: stored once.
    h.gates.clear();
    expect(outcomes(await h.pipeline.process([{ ...d1, deliveryCount: 2 }]))).toEqual(['ok']);
    expect(await h.stored()).toEqual(
      [d1, d2].map((d) => [d.message.id, 1]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
  });

  it('a merge keeps the customer whose record was accepted first, whatever order the records were processed in, across a rebuild', async () => {
    // Accepted in this order (bus sequence): A1 {email a}, B {email b}, A2 {email a, vuid a2}; then M
    // {email b, vuid a2} merges the two customers. The API stamped them with a clock running backwards:
    // only the bus's order counts. Each order of A1, B, A2 is processed by one processor, then another
    // one rebuilt from the store processes M: the customer of A1 survives (the one email a names) and
    // the profile is the same in every order, the one acceptance order gives.
    let k = 0;
    const orders = [
      [1, 2, 3],
      [1, 3, 2],
      [2, 1, 3],
      [2, 3, 1],
      [3, 1, 2],
      [3, 2, 1],
    ];
    const profiles: Record<string, unknown>[] = [];
    for (const order of orders) {
      const account = `born${++k}x${Date.now()}`;
      const profile = (
        seq: number,
        identifiers: Record<string, string>,
        attributes: Record<string, string>,
      ) =>
        deliveryOf(
          {
            id: `b${seq}-${account}`,
            account,
            kind: 'profiles',
            receivedAt: Date.now() - seq * 60_000,
            records: [{ identifiers, attributes }],
          } as unknown as IngestMessage,
          1,
          seq,
        );
      const records = new Map([
        [1, profile(1, { email: 'a@x.com' }, { first_name: 'A1', city: 'Oslo' })],
        [2, profile(2, { email: 'b@x.com' }, { first_name: 'B', country: 'NO' })],
        [3, profile(3, { email: 'a@x.com', vuid: 'a2' }, { last_name: 'Second' })],
      ]);
      const first = await newProcessor(chdb);
      for (const seq of order)
        expect(outcomes(await first.pipeline.process([records.get(seq)!]))).toEqual(['ok']);
      const second = await newProcessor(chdb);
      expect(await second.identityRebuild.rebuild(account)).toBe(true);
      const survivor = await second.identity.lookup(account, { kind: 'email', value: 'a@x.com' });
      const merge = profile(4, { email: 'b@x.com', vuid: 'a2' }, {});
      expect(outcomes(await second.pipeline.process([merge]))).toEqual(['ok']);
      expect([order, await second.identity.lookup(account, { kind: 'email', value: 'b@x.com' })]).toEqual([
        order,
        survivor,
      ]);
      profiles.push((await second.profiles.get(account, survivor!))!.attributes);
    }
    expect(profiles[0]).toMatchObject({ first_name: 'B', last_name: 'Second', city: 'Oslo', country: 'NO' });
    for (const p of profiles) expect(p).toEqual(profiles[0]);
  });

  it('keeps the purchase of an order accepted first: one processed before it leaves the store when it comes', async () => {
    const account = `kept${++n}x${Date.now()}`;
    const purchase = (seq: number, subtotal: number, product: string) =>
      deliveryOf(
        eventsMessage(
          account,
          [
            {
              type: 'order',
              action: 'purchase',
              identifiers: { email: 'k@x.com' },
              order: {
                order_id: 'o1',
                subtotal,
                items: [{ product_id: product, price: subtotal, quantity: 1, subtotal }],
              },
            },
          ],
          `kp${seq}-${account}`,
        ),
        1,
        seq,
      );
    // Accepted in this order: p1 (10th), then p2 (20th); p2 is processed first, and stored as kept.
    const [p1, p2] = [purchase(10, 100, 'first'), purchase(20, 7, 'second')];
    const { pipeline } = await newProcessor(chdb);
    const stored = async () => ({
      items: (await chdb.query<{ p: string }>(account, 'SELECT product_id AS p FROM {db}.line_items')).map(
        (r) => r.p,
      ),
      events: (
        await chdb.query<{ m: string }>(account, "SELECT msg_id AS m FROM {db}.events WHERE type = 'order'")
      ).map((r) => r.m),
      orders: await chdb.query<{ subtotal: number }>(
        account,
        'SELECT subtotal FROM {db}.orders ORDER BY version DESC LIMIT 1',
      ),
    });
    expect(outcomes(await pipeline.process([p2]))).toEqual(['ok']);
    expect((await stored()).items).toEqual(['second']);
    expect(outcomes(await pipeline.process([p1]))).toEqual(['ok']);
    const expected = { items: ['first'], events: [p1.message.id], orders: [{ subtotal: 100 }] };
    expect(await stored()).toEqual(expected);
    // Redelivered, each changes nothing more.
    expect(
      outcomes(
        await pipeline.process([
          { ...p2, deliveryCount: 2 },
          { ...p1, deliveryCount: 2 },
        ]),
      ),
    ).toEqual(['ok', 'ok']);
    expect(await stored()).toEqual(expected);
  });

  it.each([
    ['its write goes on', false],
    ['its write crashes after the insert: the redelivery deletes it', true],
  ])(
    'deletes a kept purchase that another processor displaced before its rows were even stored (%s)',
    async (_, crash) => {
      const account = `race${++n}x${Date.now()}`;
      const purchase = (seq: number, product: string) =>
        deliveryOf(
          eventsMessage(
            account,
            [
              {
                type: 'order',
                action: 'purchase',
                identifiers: { email: 'r@x.com' },
                order: {
                  order_id: 'o1',
                  subtotal: seq,
                  items: [{ product_id: product, price: seq, quantity: 1, subtotal: seq }],
                },
              },
            ],
            `rp${seq}-${account}`,
          ),
          1,
          seq,
        );
      // Two processors on one hot state and one store; the first one's store writes wait for a gate.
      const shared = {
        identity: new MemoryIdentityIndex(),
        profiles: new MemoryProfileState(),
        consent: new MemoryConsentState(),
        identifierState: new MemoryIdentifierState(),
        orders: new MemoryOrderState(),
      };
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const gated = new Proxy(chdb, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target) as unknown;
          if (typeof value !== 'function') return value;
          const fn = value as (...args: unknown[]) => unknown;
          return prop === 'write'
            ? async (...args: unknown[]) => {
                await gate;
                await fn.apply(target, args);
                if (crash) throw new Error('crashed after the insert');
              }
            : fn.bind(target);
        },
      });
      const first = await newProcessor(gated, shared);
      const second = await newProcessor(chdb, shared);
      // The first processor keeps the purchase accepted later (20th) and is slow to store it…
      const late = first.pipeline.process([purchase(20, 'late')]);
      await eventually(async () =>
        expect((await shared.orders.get(account, 'o1'))?.purchaseEventId).toBeTruthy(),
      );
      // …while the second applies the one accepted first (10th), stores it and deletes the other: not there yet.
      expect(outcomes(await second.pipeline.process([purchase(10, 'early')]))).toEqual(['ok']);
      open();
      if (!crash) expect(outcomes(await late)).toEqual(['ok']);
      else {
        expect(outcomes(await late)).not.toEqual(['ok']);
        const again = { ...purchase(20, 'late'), deliveryCount: 2 };
        expect(outcomes(await second.pipeline.process([again]))).toEqual(['ok']);
      }
      const items = await chdb.query<{ p: string }>(account, 'SELECT product_id AS p FROM {db}.line_items');
      const events = await chdb.query<{ n: number }>(
        account,
        "SELECT count() AS n FROM {db}.events WHERE type = 'order'",
      );
      expect([items.map((r) => r.p), Number(events[0]!.n)]).toEqual([['early'], 1]);
    },
  );

  it("stores an account's later profile update while its earlier one is retried, and ends as acceptance order gives", async () => {
    const h = await harnessOnChdb();
    const profile = (seq: number, attributes: Record<string, unknown>) => ({
      ...deliveryOf({
        id: `p${seq}-${h.account}`,
        account: h.account,
        kind: 'profiles',
        receivedAt: Date.now(),
        records: [{ identifiers: { customer_id: 'cust-1' }, attributes }],
      } as unknown as IngestMessage),
      sequence: seq,
    });
    // Accepted in this order: v1 (with a city), then v2.
    const [d1, d2] = [profile(1, { first_name: 'v1', city: 'Oslo' }), profile(2, { first_name: 'v2' })];
    const held = gate();
    h.gates.set(d1.message.id, held.promise);
    const first = h.pipeline.process([d1]);
    const second = h.pipeline.process([d2]);
    await eventually(() => h.resolved.length === 2 && h.writes.length > 0);
    held.fail(new Error('store timeout'));
    expect(outcomes(await first)).toEqual(['retry']);
    // v2 is stored while v1 waits for its retry ...
    expect(outcomes(await second)).toEqual(['ok']);
    h.gates.clear();
    // ... and v1, retried after it, changes only what no later record wrote.
    expect(outcomes(await h.pipeline.process([{ ...d1, deliveryCount: 2 }]))).toEqual(['ok']);
    const customer = await h.identity.lookup(h.account, { kind: 'customer_id', value: 'cust-1' });
    const expected = { first_name: 'v2', name: 'v2', city: 'Oslo' };
    expect((await h.profiles.get(h.account, customer!))!.attributes).toEqual(expected);
    // The store's current row (what exports and rebuilds read) is the same.
    const rows: { svc_id: string; attributes: Record<string, unknown> }[] = [];
    for await (const row of chdb.currentProfiles(h.account)) rows.push(row);
    expect(rows.map((r) => [r.svc_id, r.attributes])).toEqual([[customer, expected]]);
  });
});
