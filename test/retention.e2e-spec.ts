import { AnalyticStore } from '@cdp/store';
import { ADMIN_TOKEN, EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';

const DAY_S = 86_400;

/**
 * The operator's events retention (admin API) reaching the store, and an account's tables appearing at
 * its first write. The engine applies a TTL at its next merge; the test makes it merge now.
 */
// One wiring: it merges the store now (OPTIMIZE) in the test's process; scaled out chDB is the processor's.
describe("an account's events retention and lazy tables", () => {
  let p: EmbeddedPlatform;
  let acc: TestAccount;
  beforeAll(async () => {
    p = await EmbeddedPlatform.start();
    acc = await p.createAccount('kept');
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  const admin = (path: string, method: 'get' | 'put' = 'get') =>
    p.http()[method](`/admin/v1/accounts/${path}`).set('authorization', `Bearer ${ADMIN_TOKEN}`);
  const databases = () =>
    p.scalar(acc.id, 'SELECT count() AS n FROM system.databases WHERE name = {db:String}', {
      db: `cdp_${acc.id}`,
    });

  it('answers reads of an account nothing was written to as empty, without creating its tables', async () => {
    expect(await p.scalar(acc.id, 'SELECT count() AS n FROM {db}.events')).toBe(0);
    expect(await databases()).toBe(0);
  });

  it('keeps events forever by default, and lets the operator set days or forever', async () => {
    expect((await admin(`${acc.id}/retention`)).body).toEqual({ events_days: null });
    const set = await admin(`${acc.id}/retention`, 'put').send({ events_days: 30 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ events_days: 30 });
    expect((await admin(acc.id)).body.events_retention_days).toBe(30);

    for (const body of [{ events_days: 0 }, { events_days: '30' }, { events_days: 2.5 }, {}, { days: 3 }]) {
      const refused = await admin(`${acc.id}/retention`, 'put').send(body);
      expect(refused.status).toBe(400);
      expect(refused.body.detail.invalids.length).toBeGreaterThan(0);
    }
    expect((await admin('a-missing/retention', 'put').send({ events_days: 30 })).status).toBe(404);
    expect((await p.http().get(`/admin/v1/accounts/${acc.id}/retention`)).status).toBe(401);
    expect((await admin(`${acc.id}/retention`)).body).toEqual({ events_days: 30 });
  });

  it('removes events older than the retention from the store; newer ones stay', async () => {
    const now = Math.floor(Date.now() / 1000);
    const sent = await p
      .http()
      .post('/v3/events')
      .set('x-api-key', acc.publicKey)
      .send([
        { type: 'page', identifiers: { vuid: 'r1' }, data: { ts: now - 60 * DAY_S } },
        { type: 'page', identifiers: { vuid: 'r1' }, data: { ts: now - DAY_S } },
      ]);
    expect(sent.status).toBe(202);
    await eventually(async () => expect(await databases()).toBe(1));
    // The first write created the tables with the operator's retention as their TTL.
    await eventually(async () => {
      await p.app.get(AnalyticStore).execute(acc.id, 'OPTIMIZE TABLE {db}.events FINAL');
      expect(await p.scalar(acc.id, 'SELECT count() AS n FROM {db}.events')).toBe(1);
    });
    expect(
      await p.scalar(acc.id, 'SELECT count() AS n FROM {db}.events WHERE ts > now() - INTERVAL 2 DAY'),
    ).toBe(1);
  });
});
