import { ConsoleSessions, SESSIONS_BUCKET, signSession } from '@cdp/console-api';
import { MetadataStore } from '@cdp/metadata';
import { ADMIN_TOKEN, EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { postWithKey } from './support/api-calls.js';

/** The console's session security, on the HTTP level (the browser journey is console.e2e-spec.ts). */
const SECRET = 'console-session-test-secret-0123456789abcdef';

function cookieOf(setCookie: string | string[] | undefined): string {
  const header = Array.isArray(setCookie) ? setCookie[0]! : setCookie!;
  return header.split(';')[0]!; // cdp_console=<value>
}

// One wiring: sessions are the API process's alone (cookie, CSRF, proxies), the same on both wirings.
describe('console sessions (embedded)', () => {
  let p: EmbeddedPlatform;
  let account: TestAccount;

  beforeAll(async () => {
    // Behind a TLS-ending proxy on this host, the page came over HTTPS when the proxy says so.
    p = await EmbeddedPlatform.start({ CDP_CONSOLE_SECRET: SECRET, CDP_TRUSTED_PROXIES: '127.0.0.1' });
    account = await p.createAccount('console-security');
  });
  afterAll(() => p.close());

  const signIn = () =>
    p.http().post('/console/api/session').set('x-cdp-console', '1').send({ private_key: account.privateKey });

  it('serves the page with a strict Content-Security-Policy and no framing', async () => {
    const res = await p.http().get('/console');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    // No inline script in the page itself: only the bundle from this server.
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = await p.http().get('/console/assets/app.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
  });

  it('signs in with the private key only, into an HttpOnly SameSite=Strict expiring cookie without the key', async () => {
    expect(
      (await p.http().post('/console/api/session').send({ private_key: account.privateKey })).status,
    ).toBe(403); // not from the console page
    const publicKey = await p
      .http()
      .post('/console/api/session')
      .set('x-cdp-console', '1')
      .send({ private_key: account.publicKey });
    expect(publicKey.status).toBe(403);
    const wrong = await p
      .http()
      .post('/console/api/session')
      .set('x-cdp-console', '1')
      .send({ private_key: `${account.publicKey}.not-the-secret` });
    expect(wrong.status).toBe(401);

    const res = await signIn();
    expect(res.status).toBe(201);
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/^cdp_console=[^;]+/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toMatch(/Max-Age=\d+/);
    expect(setCookie).toContain('Path=/console');
    expect(setCookie).not.toContain('Secure'); // plain HTTP here; Secure when the request came over HTTPS
    const secret = account.privateKey.split('.')[1]!;
    expect(setCookie).not.toContain(secret);
    expect(JSON.stringify(res.body)).not.toContain(secret);
    expect(res.body.account.tracker_id).toBe(account.publicKey);
    expect(typeof res.body.csrf).toBe('string');
  });

  it('checks the sign-in body as every control-plane body is, after refusing a call from elsewhere', async () => {
    const post = () => p.http().post('/console/api/session');
    // Not from the console page, or from another origin: refused before the body is looked at.
    expect((await post().send({})).status).toBe(403);
    expect(
      (await post().set('x-cdp-console', '1').set('origin', 'https://evil.example').send({})).status,
    ).toBe(403);
    const invalid = async (body: unknown) => {
      const res = await post()
        .set('x-cdp-console', '1')
        .send(body as object);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ title: 'Bad Request', status: 400 });
      return res.body.detail.invalids as { field: string; reason: string }[];
    };
    expect(await invalid({})).toEqual([{ field: 'private_key', reason: 'is required' }]);
    expect(await invalid({ private_key: 42 })).toEqual([
      { field: 'private_key', reason: 'must be a string' },
    ]);
    expect(await invalid({ private_key: ' ' })).toEqual([
      { field: 'private_key', reason: 'must not be empty' },
    ]);
    expect(await invalid([account.privateKey])).toEqual([{ field: 'body', reason: 'must be an object' }]);
    // What the page sends besides the key is ignored, as elsewhere in the control plane.
    const extra = await post()
      .set('x-cdp-console', '1')
      .send({ private_key: account.privateKey, remember: true });
    expect(extra.status).toBe(201);
  });

  it('marks the cookie Secure when the page came over HTTPS (a trusted proxy says so)', async () => {
    const res = await p
      .http()
      .post('/console/api/session')
      .set('x-cdp-console', '1')
      .set('x-forwarded-proto', 'https')
      .send({ private_key: account.privateKey });
    expect(res.status).toBe(201);
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie.split('; ')).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Secure']));
  });

  it('refuses a missing, tampered, forged or expired cookie', async () => {
    const cookie = cookieOf((await signIn()).headers['set-cookie']);
    expect((await p.http().get('/console/api/account').set('cookie', cookie)).status).toBe(200);
    expect((await p.http().get('/console/api/account')).status).toBe(401);

    const [name, value] = cookie.split('=') as [string, string];
    const [payload, mac] = value.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sid: string; exp: number };
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86_400_000 })).toString(
      'base64url',
    );
    const tampered = [
      `${name}=${longer}.${mac}`, // a later expiry under the old signature
      `${name}=${payload}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`,
      `${name}=${payload}`,
      `${name}=${signSession('another-secret-of-at-least-32-characters!', claims)}`,
    ];
    for (const bad of tampered) {
      expect((await p.http().get('/console/api/account').set('cookie', bad)).status).toBe(401);
    }
    // Signed with the server's own secret but expired, or naming no session: refused all the same.
    const expired = signSession(SECRET, { sid: claims.sid, exp: Date.now() - 1000 });
    expect((await p.http().get('/console/api/account').set('cookie', `${name}=${expired}`)).status).toBe(401);
    const unknown = signSession(SECRET, { sid: 'no-such-session', exp: Date.now() + 60_000 });
    expect((await p.http().get('/console/api/account').set('cookie', `${name}=${unknown}`)).status).toBe(401);
  });

  it('needs the CSRF token and this origin on every state-changing call', async () => {
    const res = await signIn();
    const cookie = cookieOf(res.headers['set-cookie']);
    const csrf = res.body.csrf as string;
    const field = { name: 'csrf_probe', display_name: 'CSRF probe', type: 'string' };
    const post = () => p.http().post('/console/api/objects/customers/fields').set('cookie', cookie);
    expect((await post().send(field)).status).toBe(403);
    expect((await post().set('x-csrf-token', 'wrong').send(field)).status).toBe(403);
    expect(
      (await post().set('x-csrf-token', csrf).set('origin', 'https://evil.example').send(field)).status,
    ).toBe(403);
    // The token of another session does not fit this one.
    const other = (await signIn()).body.csrf as string;
    expect((await post().set('x-csrf-token', other).send(field)).status).toBe(403);
    const schema = await p
      .http()
      .get('/v3/schema/objects/customers/fields')
      .set('x-api-key', account.privateKey);
    expect(schema.body.map((f: { name: string }) => f.name)).not.toContain('csrf_probe');

    const created = await post().set('x-csrf-token', csrf).send(field);
    expect(created.status).toBe(201);
    // Created through the schema API's own service: the schema API shows it.
    const after = await p
      .http()
      .get('/v3/schema/objects/customers/fields')
      .set('x-api-key', account.privateKey);
    expect(after.body.map((f: { name: string }) => f.name)).toContain('csrf_probe');
  });

  it('signing out kills the session on the server, not only in the browser', async () => {
    const res = await signIn();
    const cookie = cookieOf(res.headers['set-cookie']);
    const out = await p
      .http()
      .delete('/console/api/session')
      .set('cookie', cookie)
      .set('x-csrf-token', res.body.csrf);
    expect(out.status).toBe(200);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    // The old cookie, replayed as is, opens nothing.
    expect((await p.http().get('/console/api/account').set('cookie', cookie)).status).toBe(401);
    expect((await p.http().get('/console/api/session').set('cookie', cookie)).status).toBe(401);
  });

  it('keeps no session record longer than needed: signing out deletes it, expired ones are swept', async () => {
    const metadata = p.app.get(MetadataStore);
    const sessions = p.app.get(ConsoleSessions);
    const sidOf = (cookie: string) =>
      (
        JSON.parse(Buffer.from(cookie.split('=')[1]!.split('.')[0]!, 'base64url').toString()) as {
          sid: string;
        }
      ).sid;
    const stored = async () => (await metadata.list(SESSIONS_BUCKET)).map((r) => r.key);
    const first = await signIn();
    const second = await signIn();
    const [a, b] = [first, second].map((r) => cookieOf(r.headers['set-cookie']));
    expect(await stored()).toEqual(expect.arrayContaining([sidOf(a!), sidOf(b!)]));

    await p.http().delete('/console/api/session').set('cookie', a!).set('x-csrf-token', first.body.csrf);
    expect(await stored()).not.toContain(sidOf(a!));
    // A sweep now leaves the live session alone; one past its expiry deletes it, and its cookie opens nothing.
    await sessions.sweep();
    expect(await stored()).toContain(sidOf(b!));
    expect((await p.http().get('/console/api/account').set('cookie', b!)).status).toBe(200);
    await sessions.sweep(Date.now() + sessions.ttlMs + 1000);
    expect(await stored()).toEqual([]);
    expect((await p.http().get('/console/api/account').set('cookie', b!)).status).toBe(401);
  });

  it('a session belongs to one account: another account’s console sees only its own keys', async () => {
    const other = await p.createAccount('console-other');
    const res = await p
      .http()
      .post('/console/api/session')
      .set('x-cdp-console', '1')
      .send({ private_key: other.privateKey });
    const page = await p
      .http()
      .get('/console/api/account')
      .set('cookie', cookieOf(res.headers['set-cookie']));
    expect(page.body.public_key).toBe(other.publicKey);
    expect(page.body.public_key).not.toBe(account.publicKey);
  });

  it('No Access: the operator sets a family’s plan, the API answers 403 saying so, the console shows it', async () => {
    const ok = await postWithKey(p, account.publicKey, '/v3/events', [
      { type: 't', action: 'a', identifiers: { email: 'n@x.io' } },
    ]);
    expect(ok.status).toBe(202);
    const set = await p
      .http()
      .patch(`/admin/v1/accounts/${account.id}/rate-limits`)
      .set('authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ events: 'no_access' });
    expect(set.status).toBe(200);
    expect(set.body.plans.events).toBe('No Access');
    const refused = await postWithKey(p, account.publicKey, '/v3/events', [
      { type: 't', action: 'a', identifiers: { email: 'n@x.io' } },
    ]);
    expect(refused.status).toBe(403);
    expect(refused.body.detail.message).toMatch(/events API .*No Access/);
    const cookie = cookieOf((await signIn()).headers['set-cookie']);
    const plans = await p.http().get('/console/api/plans').set('cookie', cookie);
    expect(plans.body.families.find((f: { family: string }) => f.family === 'events')).toMatchObject({
      plan: 'No Access',
      rate: 'no_access',
    });
    await p
      .http()
      .patch(`/admin/v1/accounts/${account.id}/rate-limits`)
      .set('authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ events: null });
    const back = await postWithKey(p, account.publicKey, '/v3/events', [
      { type: 't', action: 'a', identifiers: { email: 'n@x.io' } },
    ]);
    expect(back.status).toBe(202);
  });

  it("shows the account's events retention the operator set (forever by default)", async () => {
    const cookie = cookieOf((await signIn()).headers['set-cookie']);
    const plans = () => p.http().get('/console/api/plans').set('cookie', cookie);
    expect((await plans()).body.events_retention_days).toBeNull();
    const set = await p
      .http()
      .put(`/admin/v1/accounts/${account.id}/retention`)
      .set('authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ events_days: 400 });
    expect(set.status).toBe(200);
    expect((await plans()).body.events_retention_days).toBe(400);
  });
});
