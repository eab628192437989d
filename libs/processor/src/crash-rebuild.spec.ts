import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Delivery } from '@cdp/bus';
import type { IngestMessage } from '@cdp/contracts';
import { configureFaults, parseFaults } from '@cdp/faults';
import type { ClickHouseStore } from '@cdp/store';
import { newProcessor, deliveryOf, eventsMessage, tempChdbStore } from './testing/processor-harness.js';

/**
 * A crash after a batch's `customers` insert and before its commit, then a restart: the rebuilt hot
 * state plus the redelivery must give what the batch would have given. `customers` is a
 * ReplacingMergeTree: the engine may fold a customer's snapshots into its newest one at any time, also
 * into the snapshot of the message that was cut short (here OPTIMIZE does it, as a background merge
 * does whenever it likes: test/crash-consistency.e2e-spec.ts met it under load).
 */
describe('rebuild after a crash mid-batch (embedded drivers, chDB)', () => {
  let chdb: ClickHouseStore;
  beforeAll(() => {
    chdb = tempChdbStore('crash-rebuild');
  });
  afterAll(() => chdb.close());
  afterEach(() => configureFaults([]));

  let n = 0;
  function profilesMessage(account: string, attributes: Record<string, string>): IngestMessage {
    return {
      id: `p${++n}-${Date.now()}`,
      account,
      kind: 'profiles',
      receivedAt: Date.now(),
      records: [{ identifiers: { customer_id: attributes.customer_id! }, attributes }],
    } as unknown as IngestMessage;
  }
  const tick = () => new Promise((r) => setTimeout(r, 5));

  /**
   * The crash suite's round: customer A by its email (1), customer L by a profile (2), a record merging
   * L into A beside an order (3); batched as `cut` says, the batch carrying 3 cut short at its first
   * line-items insert, then a restart (fresh hot state rebuilt from the store) and the redelivery.
   */
  async function round(cut: 'after 1' | 'after 2', mergeParts: boolean) {
    const account = `acct${++n}${Date.now()}`;
    const first = await newProcessor(chdb);
    const m1 = eventsMessage(account, [{ type: 'pageview', identifiers: { email: 'a@x.com' } }]);
    await tick(); // A is born first
    const m2 = profilesMessage(account, { customer_id: 'l', first_name: 'Lo' });
    await tick();
    const m3 = eventsMessage(account, [
      { type: 'pageview', identifiers: { email: 'a@x.com', customer_id: 'l' } },
      {
        type: 'order',
        action: 'purchase',
        identifiers: { email: 'b@x.com' },
        order: {
          order_id: 'o1',
          total: 100,
          items: [{ product_id: 'p', price: 50, quantity: 2, subtotal: 100 }],
        },
      },
    ]);
    const stored: Delivery[] = cut === 'after 1' ? [deliveryOf(m1)] : [deliveryOf(m1), deliveryOf(m2)];
    const crashed = cut === 'after 1' ? [m2, m3] : [m3];
    await first.pipeline.process(stored);
    // The crash: links, merges, customers, order changes and events are in; line items, the commit not.
    configureFaults(parseFaults('store.insert.line_items:throw'));
    const failed = await first.pipeline.process(crashed.map((m) => deliveryOf(m)));
    expect(failed.map((r) => r.result)).toEqual(
      crashed.map(() => ({ type: 'retry', reason: expect.stringContaining('injected') })),
    );
    configureFaults([]);
    if (mergeParts) await chdb.query(account, 'OPTIMIZE TABLE {db}.customers FINAL');

    const second = await newProcessor(chdb);
    expect(await second.identityRebuild.rebuild(account)).toBe(true);
    expect(await second.ordersRebuild.rebuild(account)).toBe(true);
    const redelivered = await second.pipeline.process(crashed.map((m) => deliveryOf(m, 2)));
    expect(redelivered.map((s) => s.result.type)).toEqual(crashed.map(() => 'ok'));
    return async (kind: string, value: string) => {
      const customer = await second.identity.lookup(account, { kind, value });
      return customer && (await second.profiles.get(account, customer))?.attributes;
    };
  }

  it.each([
    ['after 1', false],
    ['after 1', true],
    ['after 2', false],
    ['after 2', true],
  ] as const)(
    'the merged profile keeps every field (batch cut %s, snapshot parts merged by the engine: %s)',
    async (cut, mergeParts) => {
      const read = await round(cut, mergeParts);
      const merged = { email: 'a@x.com', customer_id: 'l', first_name: 'Lo' };
      expect(await read('email', 'a@x.com')).toMatchObject(merged);
      expect(await read('customer_id', 'l')).toMatchObject(merged);
    },
  );
});
