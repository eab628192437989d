import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toStoreTime } from '@cdp/domain';
import { ClickHouseStore, type EventRow, type StoreBatch } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { DIGEST_REFRESH_MS, DigestedSegmentEventCounts } from './digested-event-counts.js';
import { DAY_MS } from './event-digests.js';
import { StoreSegmentEventCounts } from './store-event-counts.js';
import type { EventCondition } from './segment.js';

const CONDITIONS: EventCondition[] = [
  { type: 'product', action: 'add_to_cart', within_days: 7 },
  { type: 'product', within_days: 1 },
  { type: 'order', action: 'purchase', within_days: 30, min_total: 0 },
  { type: 'order', within_days: 2 },
];

/**
 * The digests answer what the store query answers (on chDB, the store the digests are used with):
 * windows to the millisecond, actions, order totals as the store sums them, merged customers' ids
 * together; and what is stored after the build, or fails to be, on top.
 */
describe('DigestedSegmentEventCounts on chDB', () => {
  let store: ClickHouseStore;
  let query: StoreSegmentEventCounts;
  let clock = Date.now();
  let digested: DigestedSegmentEventCounts;
  const errors: unknown[] = [];
  const now = Date.now();
  let seq = 0;

  beforeAll(() => {
    store = new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-digests-'))));
    query = new StoreSegmentEventCounts(store);
    query.coalescing = false;
    digested = new DigestedSegmentEventCounts(
      store,
      query,
      (err) => errors.push(err),
      undefined,
      () => clock,
    );
  });
  afterAll(() => store.close());

  const row = (customer: string, type: string, action: string, ts: number, order?: unknown): EventRow => ({
    event_id: `e${++seq}`,
    msg_id: `m${seq}`,
    svc_id: customer,
    ts: toStoreTime(ts),
    received_at: toStoreTime(now),
    type,
    action,
    channel: 'web',
    identifiers: {},
    data: {},
    order: order === undefined ? null : JSON.stringify(order),
  });
  const batchOf = (events: EventRow[]): StoreBatch => ({
    identityLinks: [],
    merges: [],
    conflicts: [],
    customers: [],
    events,
  });
  const compare = async (account: string, customers: string[][], at: number) => {
    for (const ids of customers) {
      const request = { account, customers: ids, conditions: CONDITIONS, now: at };
      expect(digested.digests.usable(account, CONDITIONS, at)).toBeDefined();
      expect(await digested.count(request)).toEqual(await query.count(request));
    }
  };

  it('counts as the store query does, before and after events stored since the build', async () => {
    const events = [
      row('a', 'product', 'add_to_cart', now - 7 * DAY_MS + 60_000),
      row('a', 'product', 'add_to_cart', now - 7 * DAY_MS - 60_000),
      row('a', 'product', 'view', now - DAY_MS + 60_000),
      row('a', 'product', 'view', now + 3_600_000), // a client's clock ahead
      row('b', 'order', 'purchase', now - 3 * DAY_MS, { order_id: 'o1', total: 12.34567 }),
      row('b', 'order', 'purchase', now - DAY_MS, { order_id: 'o2', total: 7 }),
      row('b', 'order', 'refund', now - DAY_MS, { order_id: 'o3', total: '5' }),
      row('c', 'page', 'view', now),
    ];
    await store.write('acc', batchOf(events), false);
    // The first lookup is the query's; the account is built meanwhile.
    const first = { account: 'acc', customers: ['a'], conditions: CONDITIONS, now };
    expect(await digested.count(first)).toEqual(await query.count(first));
    await digested.startBuild('acc', digested.digests.scopeFor('acc', CONDITIONS, now));
    const ids = [['a'], ['b'], ['c'], ['a', 'b'], ['nobody']];
    await compare('acc', ids, now);
    // Time passes: the add-to-cart near the window's edge leaves it, at the millisecond it does.
    await compare('acc', ids, now + 60_000 + 1);

    // Events stored after the build are counted once their write commits (twice told, once counted).
    const later = [
      row('c', 'product', 'add_to_cart', now),
      row('d', 'order', 'purchase', now, { total: 1.5 }),
    ];
    await store.write('acc', batchOf(later), false);
    digested.stored('acc', later);
    digested.stored('acc', later);
    await compare('acc', [...ids, ['d'], ['c', 'd']], now);
    expect(errors).toEqual([]);
  });

  it('drops an account after a write that may have stored part of its events; builds it again', async () => {
    const events = [row('x', 'product', 'add_to_cart', now)];
    await store.write('acc2', batchOf(events), false);
    await digested.startBuild('acc2', digested.digests.scopeFor('acc2', CONDITIONS, now));
    await compare('acc2', [['x']], now);
    // A write that failed after storing its rows: the digests cannot know, so they go.
    await store.write('acc2', batchOf([row('x', 'product', 'add_to_cart', now)]), false);
    digested.uncertain('acc2');
    expect(digested.digests.usable('acc2', CONDITIONS, now)).toBeUndefined();
    const request = { account: 'acc2', customers: ['x'], conditions: CONDITIONS, now };
    expect((await digested.count(request))[0]!.count).toBe(2); // the query's answer meanwhile
    await digested.startBuild('acc2', digested.digests.scopeFor('acc2', CONDITIONS, now));
    await compare('acc2', [['x']], now);
  });

  it('builds again for a type or window the digests do not cover, and after DIGEST_REFRESH_MS', async () => {
    await store.write('acc3', batchOf([row('y', 'product', 'add_to_cart', now - 40 * DAY_MS)]), false);
    await digested.startBuild('acc3', digested.digests.scopeFor('acc3', CONDITIONS, now));
    const wider: EventCondition[] = [{ type: 'product', action: 'add_to_cart', within_days: 60 }];
    expect(digested.digests.usable('acc3', wider, now)).toBeUndefined();
    const request = { account: 'acc3', customers: ['y'], conditions: wider, now };
    expect(await digested.count(request)).toEqual([{ count: 1, total: 0 }]);
    await digested.startBuild('acc3', digested.digests.scopeFor('acc3', wider, now));
    expect(digested.digests.usable('acc3', [...wider, ...CONDITIONS], now)).toBeDefined();
    const built = digested.digests.builtAt('acc3')!;
    clock += DIGEST_REFRESH_MS + 1;
    await digested.count(request);
    await digested.startBuild('acc3', digested.digests.scopeFor('acc3', wider, now));
    expect(digested.digests.builtAt('acc3')).toBeGreaterThan(built);
  });

  it('builds no account past its bound, or past the bound of every account together', async () => {
    const bounded = new DigestedSegmentEventCounts(store, query, (err) => errors.push(err), {
      perAccount: 3,
      total: 4,
    });
    const scope = (account: string) => bounded.digests.scopeFor(account, CONDITIONS, now);
    await bounded.startBuild('acc2', scope('acc2')); // 2 events in scope
    expect(bounded.digests.usable('acc2', CONDITIONS, now)).toBeDefined();
    await store.write('acc4', batchOf([1, 2, 3, 4].map(() => row('z', 'order', 'purchase', now))), false);
    await bounded.startBuild('acc4', scope('acc4')); // 4 > 3 for one account
    expect(bounded.digests.usable('acc4', CONDITIONS, now)).toBeUndefined();
    await store.write('acc5', batchOf([1, 2, 3].map(() => row('z', 'order', 'purchase', now))), false);
    await bounded.startBuild('acc5', scope('acc5')); // 3 more with acc2's 2: over 4 together
    expect(bounded.digests.usable('acc5', CONDITIONS, now)).toBeUndefined();
    // Its lookups query the store.
    const request = { account: 'acc5', customers: ['z'], conditions: CONDITIONS, now };
    expect(await bounded.count(request)).toEqual(await query.count(request));
    // Events stored later count against the bound of every account too: past it, their account goes.
    expect(bounded.digests.size()).toBe(2);
    bounded.stored(
      'acc2',
      [1, 2, 3].map(() => row('y', 'order', 'purchase', now)),
    );
    expect(bounded.digests.usable('acc2', CONDITIONS, now)).toBeUndefined();
    expect(bounded.digests.size()).toBe(0);
  });

  it('drops digests no lookup reads for an hour; a rebuild slides their window instead of widening it', async () => {
    let time = now;
    const idle = new DigestedSegmentEventCounts(
      store,
      query,
      (err) => errors.push(err),
      {},
      () => time,
    );
    await idle.startBuild('acc2', idle.digests.scopeFor('acc2', CONDITIONS, now));
    const built = idle.digests.usable('acc2', CONDITIONS, now)!;
    const width = now - built.scope.from;
    // An hour later the same conditions ask for a window that starts an hour later.
    expect(idle.digests.scopeFor('acc2', CONDITIONS, now + 3_600_000).from).toBe(now + 3_600_000 - width);
    time = now + 3_600_001;
    idle.stored('acc2', [row('y', 'order', 'purchase', time)]);
    expect(idle.digests.usable('acc2', CONDITIONS, time)).toBeUndefined();
    expect(idle.digests.size()).toBe(0);
  });
});
