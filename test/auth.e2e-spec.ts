import { ADMIN_TOKEN, EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { StoreChecks } from './support/store-checks.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { postWithKey } from './support/api-calls.js';

/** The same suite on both wirings: all in one process, and API + processor on NATS and Redis. */
describe.each(WIRINGS)('authentication, keys and the error envelope (%s)', (_wiring, start) => {
  let p: Platform;
  let a: TestAccount;
  let b: TestAccount;
  // The other account's store: what one account sends never lands there.
  const storeOfB = new StoreChecks(() => ({ platform: p, account: b.id }));

  beforeAll(async () => {
    ({ p, acc: a } = await startWithAccount(start, 'a'));
    b = await p.createAccount('b');
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  const event = { type: 'pageview', identifiers: { email: 'who@x.com' }, data: { page: '/' } };

  function expectEnvelope(res: {
    status: number;
    body: Record<string, unknown>;
    headers: Record<string, string>;
  }): void {
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['z-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body).toEqual({
      title: expect.any(String),
      status: res.status,
      timestamp: expect.any(String),
      detail: expect.any(Object),
    });
    expect(Number.isNaN(Date.parse(res.body.timestamp as string))).toBe(false);
  }

  it.each([
    ['no key', undefined],
    ['an unknown key', 'nobody'],
    ['a wrong secret', 'SELF.wrong'],
    ['a key with an empty secret', 'SELF.'],
  ])('answers 401 "could not be authenticated" to %s', async (_label, key) => {
    const req = p.http().post('/v3/events').send(event);
    if (key) void req.set('x-api-key', key.replace('SELF', a.publicKey));
    const res = await req;
    expect(res.status).toBe(401);
    expectEnvelope(res);
    expect(res.body.detail).toEqual({ message: 'could not be authenticated' });
  });

  it('lets the public key send data but not read profiles (403), and the private key do both', async () => {
    expect((await postWithKey(p, a.publicKey, '/v3/events', event)).status).toBe(202);
    expect((await postWithKey(p, a.privateKey, '/v3/events', event)).status).toBe(202);
    expect(
      (await postWithKey(p, a.publicKey, '/v3/profiles', { attributes: { email: 'x@x.com' } })).status,
    ).toBe(202);
    const forbidden = await p.http().get('/v3/profiles?email=who@x.com').set('x-api-key', a.publicKey);
    expect(forbidden.status).toBe(403);
    expectEnvelope(forbidden);
    await eventually(
      async () =>
        (await p.http().get('/v3/profiles?email=who@x.com').set('x-api-key', a.privateKey)).status === 200,
    );
  });

  it('keeps accounts apart: neither key reaches the other account', async () => {
    await postWithKey(p, a.publicKey, '/v3/profiles', {
      attributes: { email: 'only-a@x.com', city: 'Oslo' },
    });
    await postWithKey(p, b.publicKey, '/v3/profiles', {
      attributes: { email: 'only-b@x.com', city: 'Rome' },
    });
    const seen = await eventually(async () => {
      const res = await p.http().get('/v3/profiles?email=only-a@x.com').set('x-api-key', a.privateKey);
      return res.status === 200 && res.body;
    });
    expect(seen.attributes.city).toBe('Oslo');
    await eventually(
      async () =>
        (await p.http().get('/v3/profiles?email=only-b@x.com').set('x-api-key', b.privateKey)).status === 200,
    );
    expect(
      (await p.http().get('/v3/profiles?email=only-a@x.com').set('x-api-key', b.privateKey)).status,
    ).toBe(404);
    expect(
      (await p.http().get('/v3/profiles?email=only-b@x.com').set('x-api-key', a.privateKey)).status,
    ).toBe(404);
    // A private key made of one account's tracker id and another's secret authenticates nobody.
    const mixed = `${a.publicKey}.${b.privateKey.split('.')[1]}`;
    expect((await p.http().get('/v3/profiles?email=only-a@x.com').set('x-api-key', mixed)).status).toBe(401);
    await storeOfB.check(async (query) => {
      const [row] = await query<{ n: number | string }>(
        "SELECT count() AS n FROM {db}.customers WHERE email = 'only-a@x.com'",
      );
      expect(Number(row!.n)).toBe(0);
    });
  });

  it('puts z-request-id and the envelope on every kind of answer', async () => {
    const answers = await Promise.all([
      p.http().get('/health'),
      p.http().get('/openapi.json'),
      postWithKey(p, a.publicKey, '/v3/events', event),
      postWithKey(p, a.publicKey, '/v3/events', {}),
      p.http().get('/no/such/route'),
      p
        .http()
        .post('/v3/events')
        .set('x-api-key', a.publicKey)
        .set('content-type', 'text/plain')
        .send('hello'),
      p
        .http()
        .post('/v3/events')
        .set('x-api-key', a.publicKey)
        .set('content-type', 'application/json')
        .send('{broken'),
    ]);
    const ids = answers.map((r) => r.headers['z-request-id']);
    expect(new Set(ids).size).toBe(answers.length);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 202, 400, 404, 415, 400]);
    for (const res of answers.slice(3)) expectEnvelope(res);
    const openapi = answers[1].body as { openapi: string; paths: Record<string, object> };
    expect(openapi.openapi).toMatch(/^3\./);
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining(['/v3/events', '/v3/profiles', '/admin/v1/accounts', '/health']),
    );
  });

  describe('admin API', () => {
    const admin = (path: string, method: 'get' | 'post' | 'delete' = 'get', token = ADMIN_TOKEN) =>
      p.http()[method](path).set('authorization', `Bearer ${token}`);

    it('refuses a missing or wrong bearer token with 401', async () => {
      expect((await p.http().get('/admin/v1/accounts')).status).toBe(401);
      expect((await admin('/admin/v1/accounts', 'get', 'wrong')).status).toBe(401);
      // An API key is no admin credential.
      expect((await p.http().get('/admin/v1/accounts').set('x-api-key', a.privateKey)).status).toBe(401);
    });

    it('lists accounts without secrets, rotates and revokes keys', async () => {
      const list = await admin('/admin/v1/accounts');
      expect(list.status).toBe(200);
      expect(list.body.accounts.map((x: { id: string }) => x.id)).toEqual(
        expect.arrayContaining([a.id, b.id]),
      );
      expect(JSON.stringify(list.body)).not.toContain(a.privateKey.split('.')[1]);

      const rotated = await admin(`/admin/v1/accounts/${a.id}/keys`, 'post');
      expect(rotated.status).toBe(201);
      const newKey: string = rotated.body.private_key;
      expect(newKey.startsWith(`${a.publicKey}.`)).toBe(true);
      // Both keys work: the old one is revoked but inside its 12-hour grace.
      for (const key of [newKey, a.privateKey]) {
        expect((await p.http().get('/v3/profiles?email=nobody@x.com').set('x-api-key', key)).status).toBe(
          404,
        );
      }
      const revokedKey = rotated.body.account.keys.find((k: { revoked_at?: string }) => k.revoked_at);
      expect(Date.parse(revokedKey.expires_at) - Date.parse(revokedKey.revoked_at)).toBe(12 * 3600 * 1000);

      const current = rotated.body.account.keys.find((k: { revoked_at?: string }) => !k.revoked_at);
      const revoked = await admin(`/admin/v1/accounts/${a.id}/keys/${current.id}`, 'delete');
      expect(revoked.status).toBe(200);
      expect((await admin(`/admin/v1/accounts/${a.id}/keys/nope`, 'delete')).status).toBe(404);
      expect((await admin('/admin/v1/accounts/nope')).status).toBe(404);
    });

    it('takes Content-Type: application/json with no body on a route that takes none; one that needs a body says so', async () => {
      const json = { 'content-type': 'application/json' };
      const rotated = await admin(`/admin/v1/accounts/${b.id}/keys`, 'post').set(json);
      expect(rotated.status).toBe(201);
      const current = rotated.body.account.keys.find((k: { revoked_at?: string }) => !k.revoked_at);
      const revoked = await admin(`/admin/v1/accounts/${b.id}/keys/${current.id}`, 'delete').set(json);
      expect(revoked.status).toBe(200);
      const needs = await p.http().post('/v3/profiles').set('x-api-key', b.privateKey).set(json);
      expect(needs.status).toBe(400);
      expectEnvelope(needs);
      expect(JSON.stringify(needs.body.detail)).toMatch(/body/);
    });

    it('refuses a tracker id that is taken or not URL-safe', async () => {
      const taken = await admin('/admin/v1/accounts', 'post').send({ tracker_id: a.publicKey });
      expect(taken.status).toBe(400);
      expect(taken.body.detail.invalids[0].field).toBe('tracker_id');
      expect((await admin('/admin/v1/accounts', 'post').send({ tracker_id: 'has.dot' })).status).toBe(400);
    });
  });

  it('holds in the store what the tests above checked there (scaled out: read once, here)', async () => {
    const ran = await storeOfB.runKept();
    if (!(p instanceof EmbeddedPlatform)) expect(ran).toBe(1);
  }, 120_000);
});
