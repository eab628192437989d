import { readFileSync } from 'node:fs';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { StoreChecks } from './support/store-checks.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { completedExport } from './support/exports.js';
import { expectInvalids } from './support/answers.js';

/** Identity resolution through the API, on both wirings: merges, conflicts, field rules. */
describe.each(WIRINGS)('customers and identity (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;

  beforeAll(async () => ({ p, acc } = await startWithAccount(start)), 60_000);
  afterAll(() => p.close(), 30_000);
  // Embedded, store checks run at once; scaled out, together in the last test (processor stopped).
  const store = new StoreChecks(() => ({ platform: p, account: acc.id }));

  const post = (path: string, body: unknown) =>
    p
      .http()
      .post(path)
      .set('x-api-key', acc.publicKey)
      .send(body as object);
  const profile = (query: string) => p.http().get(`/v3/profiles?${query}`).set('x-api-key', acc.privateKey);
  const profileWhen = (query: string, ready: (attributes: Record<string, unknown>) => boolean) =>
    eventually(async () => {
      const r = await profile(query);
      return r.status === 200 && ready(r.body.attributes) && (r.body.attributes as Record<string, unknown>);
    });

  it('merges two customers an event ties together: the older survives with both profiles and histories', async () => {
    expect(
      (await post('/v3/profiles', { attributes: { email: 'old@x.com', first_name: 'Old', city: 'Oslo' } }))
        .status,
    ).toBe(202);
    await profileWhen('email=old@x.com', (a) => a.city === 'Oslo');
    await post('/v3/events', { type: 'pageview', identifiers: { vuid: 'young-dev' }, data: { page: '/a' } });
    await post('/v3/profiles', { attributes: { vuid: 'young-dev', city: 'Rome', phone: '123' } });
    await profileWhen('vuid=young-dev', (a) => a.phone === '123');

    await post('/v3/events', {
      type: 'account',
      action: 'login',
      identifiers: { vuid: 'young-dev', email: 'old@x.com' },
    });
    // The merge shows in the identity index a moment before the profiles are folded (README "Reads").
    const merged = await profileWhen('vuid=young-dev', (a) => a.email === 'old@x.com' && 'phone' in a);
    // Field by field, the later write wins (docs/api-notes.md "Derived name" and the merge fold): Rome was
    // accepted after Oslo; the merged profile fills what the survivor lacked.
    expect(merged).toEqual({
      email: 'old@x.com',
      first_name: 'Old',
      name: 'Old',
      city: 'Rome',
      phone: '123',
    });
    expect((await profile('email=old@x.com')).body.attributes).toEqual(merged);

    // An export attributes the merged customer's earlier pageview to the survivor.
    const exported = await completedExport(p, acc.privateKey, {
      select: {
        object: 'events',
        fields: ['page', 'customer.email', 'customer.city'],
        filter: { field: 'page', operator: '=', value: '/a' },
      },
    });
    const csv = readFileSync(exported.fileOf(exported.manifest().files[0]!), 'utf8');
    expect(csv.trim().split('\n')).toEqual(['page,customer.email,customer.city', '/a,old@x.com,Rome']);

    await store.check(async (query) => {
      type Merge = { loser: string; survivor: string; cause: string[] };
      const merges = await query<Merge>(
        "SELECT loser, survivor, cause FROM {db}.identity_merges WHERE has(cause, 'vuid:young-dev')",
      );
      expect(merges).toHaveLength(1);
      const m = merges[0]!;
      expect(m.cause).toEqual(['email:old@x.com', 'vuid:young-dev']);
      // Every event, the loser's earlier pageview included, belongs to the survivor now.
      const owners = await query<{ owner: string }>(
        `SELECT DISTINCT if(s.survivor != '', s.survivor, e.svc_id) AS owner
         FROM {db}.events AS e LEFT JOIN {db}.customer_survivors AS s ON e.svc_id = s.svc_id
         WHERE e.identifiers['vuid'] = 'young-dev' OR e.identifiers['email'] = 'old@x.com'`,
      );
      expect(owners).toEqual([{ owner: m.survivor }]);
      const gone = await query<{ merged_into: string }>(
        'SELECT merged_into FROM {db}.customers FINAL WHERE svc_id = {loser:String}',
        { loser: m.loser },
      );
      expect(gone).toEqual([{ merged_into: m.survivor }]);
    });
  });

  it("keeps a merged customer's list subscriptions: the survivor's own decisions win", async () => {
    const priv = (path: string, body: unknown) =>
      p
        .http()
        .post(path)
        .set('x-api-key', acc.privateKey)
        .send(body as object);
    expect((await priv('/v3/lists', { name: 'Merge News' })).status).toBe(201);
    expect((await priv('/v3/lists', { name: 'Merge Deals' })).status).toBe(201);
    await post('/v3/profiles', { attributes: { email: 'sub-old@x.com' } });
    await profileWhen('email=sub-old@x.com', () => true);
    await post('/v3/profiles', { attributes: { email: 'sub-new@x.com' } });
    await profileWhen('email=sub-new@x.com', () => true);
    await post('/v3/lists/subscriptions', [
      { list_id: 'merge_news', email: 'sub-new@x.com', subscribed: true },
      { list_id: 'merge_deals', email: 'sub-new@x.com', subscribed: true },
      { list_id: 'merge_deals', email: 'sub-old@x.com', subscribed: false },
    ]);
    await post('/v3/events', {
      type: 'account',
      action: 'login',
      identifiers: { email: 'sub-old@x.com', vuid: 'sub-dev' },
    });
    await post('/v3/events', { type: 'pageview', identifiers: { email: 'sub-new@x.com', vuid: 'sub-dev' } });
    // Merged: both emails read the one customer (its email the later written, sub-new's).
    await eventually(async () => {
      const [a, b] = await Promise.all([profile('email=sub-old@x.com'), profile('email=sub-new@x.com')]);
      return a.status === 200 && JSON.stringify(a.body) === JSON.stringify(b.body);
    });
    const status = await eventually(async () => {
      const r = await p
        .http()
        .get('/v3/lists/subscriptions?email=sub-old@x.com&include=merge_news,merge_deals')
        .set('x-api-key', acc.privateKey);
      const subs = r.body.subscriptions as { list_id: string; subscribed: boolean }[];
      return subs.some((x) => x.list_id === 'merge_news' && x.subscribed) && subs;
    });
    expect(status).toEqual([
      { name: 'Merge News', list_id: 'merge_news', subscribed: true },
      { name: 'Merge Deals', list_id: 'merge_deals', subscribed: false },
    ]);
  });

  it('never merges customers with different customer_ids: the record is accepted and the conflict recorded', async () => {
    await post('/v3/profiles', { attributes: { customer_id: 'X-1', email: 'shared@x.com', city: 'Oslo' } });
    await profileWhen('customer_id=X-1', (a) => a.city === 'Oslo');
    const res = await post('/v3/profiles', {
      attributes: { customer_id: 'Y-2', email: 'shared@x.com', city: 'Rome' },
    });
    expect(res.status).toBe(202);
    const y = await profileWhen('customer_id=Y-2', (a) => a.city === 'Rome');
    expect(y).toEqual({ customer_id: 'Y-2', city: 'Rome' }); // the email stays with X-1
    expect((await profile('email=shared@x.com')).body.attributes).toEqual({
      customer_id: 'X-1',
      email: 'shared@x.com',
      city: 'Oslo',
    });
    await store.check(async (query) => {
      const conflicts = await query<{ reason: string; cause: string[] }>(
        "SELECT reason, cause FROM {db}.identity_conflicts WHERE has(cause, 'email:shared@x.com')",
      );
      expect(conflicts).toEqual([
        { reason: 'customer_id', cause: ['customer_id:Y-2', 'email:shared@x.com'] },
      ]);
    });
  });

  it('never lets a junk identifier value identify anyone', async () => {
    await post('/v3/events', [
      { type: 'pageview', identifiers: { vuid: 'j-1', email: 'anonymous' } },
      { type: 'pageview', identifiers: { vuid: 'j-2', email: 'anonymous' } },
    ]);
    await post('/v3/profiles', [
      { attributes: { vuid: 'j-1', city: 'A' } },
      { attributes: { vuid: 'j-2', city: 'B' } },
    ]);
    expect(await profileWhen('vuid=j-1', (a) => a.city === 'A')).toEqual({ city: 'A' });
    expect(await profileWhen('vuid=j-2', (a) => a.city === 'B')).toEqual({ city: 'B' });
  });

  it('refuses values the customer table does not allow, each on its field and record', async () => {
    const res = await post('/v3/profiles', [
      { attributes: { email: 'fine@x.com', gender: 'F', country: 'nor', timezone: 'Europe/Oslo' } },
      {
        attributes: { email: 'bad@x.com', gender: 'female', country: 'NO', timezone: 'Oslo', image_url: 'x' },
      },
      { attributes: { email: 'not-an-email' } },
      { attributes: { email: 'long@x.com', city: 'x'.repeat(1025) } },
    ]);
    expectInvalids(res, [
      { event: 1, field: 'attributes.gender', reason: 'must be M or F' },
      {
        event: 1,
        field: 'attributes.country',
        reason: 'must be an ISO 3166-1 alpha-3 country code',
      },
      {
        event: 1,
        field: 'attributes.timezone',
        reason: expect.stringContaining('tz database'),
      },
      {
        event: 1,
        field: 'attributes.image_url',
        reason: 'must be a valid http or https URL',
      },
      {
        event: 2,
        field: 'attributes.email',
        reason: expect.stringContaining('email address'),
      },
      {
        event: 3,
        field: 'attributes.city',
        reason: expect.stringContaining('1024'),
      },
    ]);
    expect((await profile('email=fine@x.com')).status).toBe(404); // nothing of a refused request is stored
    const ok = await post('/v3/profiles', {
      attributes: { email: 'fine@x.com', country: 'nor', city: 'x'.repeat(1024) },
    });
    expect(ok.status).toBe(202);
    expect(await profileWhen('email=fine@x.com', (a) => a.country === 'NOR')).toMatchObject({
      country: 'NOR',
    });
  });

  it('drops fields the account has not defined, keeps the rest, and says what it dropped', async () => {
    const res = await post('/v3/profiles', [
      { attributes: { email: 'drop@x.com', city: 'Oslo', shoe_size: 44, favourite: 'x' } },
      { attributes: { email: 'keep@x.com' } },
    ]);
    expect(res.status).toBe(202);
    expect(res.body.dropped).toEqual([{ event: 0, fields: ['shoe_size', 'favourite'] }]);
    expect(await profileWhen('email=drop@x.com', (a) => a.city === 'Oslo')).toEqual({
      email: 'drop@x.com',
      city: 'Oslo',
    });
    const ev = await post('/v3/events', {
      type: 'pageview',
      identifiers: { vuid: 'd-1' },
      data: { page: '/', mood: 'ok' },
    });
    expect(ev.body.dropped).toEqual([{ event: 0, fields: ['mood'] }]);
  });

  it('holds in the store what the tests above checked there (scaled out: read once, here)', async () => {
    const ran = await store.runKept();
    if (!(p instanceof EmbeddedPlatform)) expect(ran).toBe(2);
  }, 120_000);
});
