import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClusterRehearsal } from '@cdp/store/testing';
import { ConsoleStoreReads } from './console-store-reads.js';

/**
 * The console's store reads from a store in cluster mode, rehearsed on one chDB node (ClusterRehearsal):
 * each read is parsed and run, and none has an IN or JOIN a cluster would refuse.
 */
describe('console store reads on a cluster, rehearsed on chDB', () => {
  let transport: ChdbTransport;

  beforeAll(() => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-console-cluster-')));
  });
  afterAll(() => transport.close());

  it('reads a customer and the account with every join GLOBAL or co-sharded', async () => {
    const node = new ClickHouseStore(transport);
    await node.execute(
      'shop',
      `INSERT INTO {db}.events (event_id, msg_id, svc_id, ts, received_at, type, action, channel, order)
       VALUES ('e1', 'm1', 'c1', now64(3), now64(3), 'order', 'purchase', 'web', '{"total": 12.5}')`,
    );
    await node.execute(
      'shop',
      `INSERT INTO {db}.ingest_commits (msg_id, done, at) VALUES ('m1', 1, now64(3))`,
    );

    const rehearsal = new ClusterRehearsal(transport);
    const reads = new ConsoleStoreReads(
      new ClickHouseStore(rehearsal.transport, { layout: { cluster: 'cdp' } }),
    );
    await reads.merges('shop', ['c1']);
    await reads.links('shop', ['c1']);
    await reads.consentHistory('shop', ['c1']);
    const timeline = await reads.timeline('shop', ['c1'], 10);
    await reads.eventsPerMinute('shop', 60);
    const lag = await reads.ingestLag('shop', 60);
    await reads.totals('shop');
    await reads.revenueByDay('shop', 30);

    expect(timeline.events.map((e) => [e.event_id, e.tally])).toEqual([['e1', 12.5]]);
    expect(lag.map((m) => m.messages)).toEqual([1]);
    expect(rehearsal.statements.some((s) => s.includes('GLOBAL INNER JOIN'))).toBe(true);
    expect(rehearsal.misplacedJoins()).toEqual([]);
  });
});
