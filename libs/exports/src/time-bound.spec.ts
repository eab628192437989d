import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClusterRehearsal } from '@cdp/store/testing';
import { BUILT_IN_CATALOG, CUSTOMERS_OBJECT, EVENTS_OBJECT, LINE_ITEMS_OBJECT } from './export-objects.js';
import { pageQuery } from './export.runner.js';
import { filterTimeRange, storeTimeBound } from './time-bound.js';

const JAN_15 = Date.UTC(2026, 0, 15);
const MAR_1 = Date.UTC(2026, 2, 1);

describe('the time bound of an export filter', () => {
  it('takes the comparisons of the time column anded at the top, and nothing under an or', () => {
    const ts = (operator: '>' | '>=' | '<' | '<=' | '=' | '!=', value: string | number) =>
      ({ field: 'ts', operator, value }) as const;
    expect(filterTimeRange(ts('>=', '2026-03-01'), EVENTS_OBJECT)).toEqual({ from: MAR_1 });
    expect(
      filterTimeRange(
        { and: [ts('>', JAN_15 / 1000), { and: [ts('<', '2026-03-01T00:00:00Z'), ts('<=', '2026-04-01')] }] },
        EVENTS_OBJECT,
      ),
    ).toEqual({ from: JAN_15, to: MAR_1 });
    expect(filterTimeRange(ts('=', '2026-03-01'), LINE_ITEMS_OBJECT)).toEqual({ from: MAR_1, to: MAR_1 });
    // Rows outside the range can pass an or, a !=, or a relation's field: no bound.
    expect(filterTimeRange({ or: [ts('>=', '2026-03-01'), ts('<', '2026-01-01')] }, EVENTS_OBJECT)).toBe(
      undefined,
    );
    expect(filterTimeRange(ts('!=', '2026-03-01'), EVENTS_OBJECT)).toBe(undefined);
    expect(filterTimeRange({ not: ts('<', '2026-03-01') }, EVENTS_OBJECT)).toBe(undefined);
    expect(
      filterTimeRange({ and: [ts('>=', '2026-03-01'), { not: ts('>=', '2026-04-01') }] }, EVENTS_OBJECT),
    ).toEqual({
      from: MAR_1,
    });
    expect(filterTimeRange({ field: 'product.ts', operator: '>', value: '2026-03-01' }, EVENTS_OBJECT)).toBe(
      undefined,
    );
    // An object whose table has no time partition (customers are versions of a customer) reads whole.
    expect(filterTimeRange(ts('>=', '2026-03-01'), CUSTOMERS_OBJECT)).toBe(undefined);
  });
});

/** The store's side of a time-filtered export on chDB: which months its page reads touch. */
describe('time-bounded export reads on chDB', () => {
  let transport: ChdbTransport;
  let store: ClickHouseStore;

  beforeAll(async () => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-export-bound-')));
    store = new ClickHouseStore(transport);
    // One event a month, January to March: one part (and partition) each.
    for (const [i, month] of ['01', '02', '03'].entries())
      await store.execute(
        'shop',
        `INSERT INTO {db}.events (event_id, msg_id, svc_id, ts, received_at, type, action, channel)
         VALUES ('e${i}', 'm${i}', 'c1', '2026-${month}-15 12:00:00', now64(3), 'pageview', 'view', 'web')`,
      );
  });
  afterAll(() => transport.close());

  it('reads one month of three for a filter on March (EXPLAIN indexes = 1), every row of it', async () => {
    const range = filterTimeRange({ field: 'ts', operator: '>=', value: '2026-03-01' }, EVENTS_OBJECT)!;
    const page = pageQuery(EVENTS_OBJECT, undefined, 100, { bound: storeTimeBound(range, 'ts') });
    const plan = (
      await store.query<{ explain: string }>('shop', `EXPLAIN indexes = 1 ${page.sql}`, page.params)
    )
      .map((r) => r.explain)
      .join('\n');
    const partition = /Min-Max[\s\S]*?Parts: (\d+)\/(\d+)/.exec(plan);
    expect(partition && [Number(partition[1]), Number(partition[2])]).toEqual([1, 3]);
    const rows = await store.query<{ event_id: string }>('shop', page.sql, page.params);
    expect(rows.map((r) => r.event_id)).toEqual(['e2']);
    // Without a bound (a full export) every month is read: it needs them all.
    const whole = pageQuery(EVENTS_OBJECT, undefined, 100);
    expect(await store.query('shop', whole.sql, whole.params)).toHaveLength(3);
  });

  it("reads every built-in object's pages on a cluster with no IN or JOIN a cluster would refuse", async () => {
    const rehearsal = new ClusterRehearsal(transport);
    const clustered = new ClickHouseStore(rehearsal.transport, { layout: { cluster: 'cdp' } });
    for (const name of BUILT_IN_CATALOG.names()) {
      const object = BUILT_IN_CATALOG.object(name)!;
      const page = pageQuery(object, undefined, 10);
      await clustered.query('shop', page.sql, page.params);
    }
    expect(rehearsal.statements.length).toBeGreaterThanOrEqual(BUILT_IN_CATALOG.names().length);
    expect(rehearsal.misplacedJoins()).toEqual([]);
  });
});
