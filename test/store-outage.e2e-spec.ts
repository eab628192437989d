import { randomBytes } from 'node:crypto';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import type { TestAccount } from './support/embedded.js';

const OUTAGE_MS = 60_000;

/**
 * The store refuses every write for a minute (`store.transport.insert:throw~60000` in the processor),
 * under a steady load of new customers. A transient, global failure is retried, never dead-lettered:
 * afterwards every acknowledged record is stored exactly once and every acknowledged customer is
 * readable. The ingest stream is kept small (1 MiB) so that it fills during the outage: the API then
 * answers 503 with Retry-After instead of accepting what it could not keep.
 */
// One wiring: it fills the JetStream stream; the embedded bus's bound is its contract's (bus full → 503).
describe('a store that refuses writes for a minute (scaled out)', () => {
  let p: ScaledPlatform;
  let acc: TestAccount;

  beforeAll(async () => {
    p = await ScaledPlatform.start({ CDP_NATS_STREAM_MAX_MB: '1' });
    acc = await p.createAccount('outage');
    await p.stopProcessor();
    await p.startProcessor({ CDP_TEST_FAULTS: `store.transport.insert:throw~${OUTAGE_MS}` });
  });

  afterAll(async () => {
    await p?.close();
  });

  it('loses, doubles and dead-letters nothing, and answers 503 with Retry-After while the bus is full', async () => {
    const acknowledged = new Map<string, string[]>(); // customer → pages
    const refusals: string[] = []; // Retry-After of each 503
    let sent = 0;
    let firstAckAt: number | undefined;
    const started = Date.now();
    // Runs a little past the outage, which starts with the first write the processor tries.
    const loadUntil = () => (firstAckAt ?? started) + OUTAGE_MS + 5000;

    const client = async () => {
      while (Date.now() < loadUntil()) {
        const n = sent++;
        const customer = `c${n}`;
        // Random text does not compress: the 1 MiB stream fills within the outage.
        const pages = Array.from(
          { length: 10 },
          (_, i) => `/o${n}-${i}-${randomBytes(150).toString('base64')}`,
        );
        const res = await fetch(p.url('/v3/events'), {
          method: 'POST',
          headers: { 'x-api-key': acc.publicKey, 'content-type': 'application/json' },
          body: JSON.stringify(
            pages.map((page) => ({
              type: 'pageview',
              identifiers: { customer_id: customer },
              data: { page },
            })),
          ),
        });
        await res.arrayBuffer();
        if (res.status === 202) {
          firstAckAt ??= Date.now();
          acknowledged.set(customer, pages);
        } else {
          expect(res.status).toBe(503);
          refusals.push(res.headers.get('retry-after') ?? '');
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await Promise.all([client(), client()]);
    const loadStoppedAt = Date.now();

    // The backlog drains once the store takes writes again.
    await eventually(async () => (await p.pending()) === 0, 180_000, 200);
    const drainedAt = Date.now();
    const recoveredAt = firstAckAt! + OUTAGE_MS;
    process.stdout.write(
      `[store outage] ${sent} requests: ${acknowledged.size} acknowledged, ${refusals.length} refused (503); ` +
        `backlog drained ${drainedAt - recoveredAt} ms after the store recovered ` +
        `(${drainedAt - loadStoppedAt} ms after the load stopped)\n`,
    );

    // While the bus was full the API said so, with a time to come back.
    if (refusals.length) expect(refusals.every((r) => Number(r) >= 1)).toBe(true);
    expect(refusals.length).toBeGreaterThan(0);
    expect(acknowledged.size).toBeGreaterThan(0);

    // Nothing was given up ...
    const health = (await (await fetch(p.url('/health'))).json()) as { dead_letters: { count: number } };
    expect(health.dead_letters).toEqual({ count: 0 });

    // ... every acknowledged customer is readable ...
    await eventually(
      async () => {
        for (const customer of acknowledged.keys()) {
          const res = await fetch(p.url(`/v3/profiles?customer_id=${customer}`), {
            headers: { 'x-api-key': acc.privateKey },
          });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`${customer}: ${res.status}`);
        }
        return true;
      },
      60_000,
      500,
    );

    // ... and every acknowledged event is in the store exactly once.
    const stored = await p.withStore(async (store) => {
      const rows = await store.query<{ page: string; n: number }>(
        acc.id,
        'SELECT page, count() AS n FROM {db}.events GROUP BY page',
      );
      return new Map(rows.map((r) => [r.page, Number(r.n)]));
    });
    const expected = [...acknowledged.values()].flat();
    const lost = expected.filter((page) => !stored.has(page));
    const doubled = expected.filter((page) => (stored.get(page) ?? 0) > 1);
    expect({ lost: lost.length, doubled: doubled.length }).toEqual({ lost: 0, doubled: 0 });
  }, 420_000);
});
