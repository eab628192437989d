import { signUnsubscribeToken } from '@cdp/lists';
import { type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { readStore } from './support/store-checks.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { postWithKey } from './support/api-calls.js';

const SECRET = 'unsubscribe-links-e2e-secret-0123456789abcdef';
const PUBLIC_URL = 'https://mail.example.com';

interface Status {
  opted_in: boolean;
  subscriptions: { list_id: string; subscribed: boolean }[];
}

/**
 * Email unsubscribe links (issue 20; spec "Events": a link in a message unsubscribes from the campaign's
 * lists, or globally when none): made with the private key, used with none, refused when changed or
 * expired; each use is a `list`/`subscribe` event and a consent-history row.
 */
describe.each(WIRINGS)('email unsubscribe links (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;

  beforeAll(async () => {
    ({ p, acc } = await startWithAccount(start, 'unsubscribe', {
      CDP_UNSUBSCRIBE_SECRET: SECRET,
      CDP_PUBLIC_URL: PUBLIC_URL,
    }));
    for (const name of ['News <i>', 'Promo'])
      expect((await postWithKey(p, acc.privateKey, '/v3/lists', { name })).status).toBe(201);
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  const makeLink = (body: unknown, key = acc.privateKey) =>
    postWithKey(p, key, '/v3/lists/unsubscribe-links', body);
  /** The path and query of a link, to send to the platform under test. */
  const local = (url: string) => url.slice(PUBLIC_URL.length);
  const oneClick = (path: string) =>
    p
      .http()
      .post(path)
      .set('content-type', 'application/x-www-form-urlencoded')
      .send('List-Unsubscribe=One-Click');
  const statusOf = async (email: string): Promise<Status> => {
    const res = await p
      .http()
      .get(`/v3/lists/subscriptions?email=${encodeURIComponent(email)}`)
      .set('x-api-key', acc.privateKey);
    expect(res.status).toBe(200);
    return res.body as Status;
  };
  const membership = (s: Status) => Object.fromEntries(s.subscriptions.map((x) => [x.list_id, x.subscribed]));
  const subscribeAll = async (email: string) => {
    const res = await p
      .http()
      .post('/v3/lists/subscriptions')
      .set('x-api-key', acc.publicKey)
      .send([
        { opted_in: true, email },
        { list_id: 'news_i_', email, subscribed: true },
        { list_id: 'promo', email, subscribed: true },
      ]);
    expect(res.status).toBe(200);
    await eventually(async () => {
      const s = await statusOf(email);
      return s.opted_in && membership(s).news_i_ && membership(s).promo;
    });
  };

  it('makes a signed link with its List-Unsubscribe headers (201), with the private key only', async () => {
    const res = await makeLink({ email: 'ann@x.com', list_ids: ['news_i_'] });
    expect(res.status).toBe(201);
    const url = res.body.url as string;
    expect(url).toMatch(
      new RegExp(`^${PUBLIC_URL}/v3/lists/unsubscribe\\?token=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
    );
    expect(res.body.headers).toEqual({
      'List-Unsubscribe': `<${url}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
    const expires = Date.parse(res.body.expires_at as string);
    expect(expires).toBeGreaterThan(Date.now() + 59 * 86_400_000);
    expect((await makeLink({ email: 'ann@x.com' }, acc.publicKey)).status).toBe(403);
    expect((await p.http().post('/v3/lists/unsubscribe-links').send({ email: 'ann@x.com' })).status).toBe(
      401,
    );
  });

  it('refuses bad requests for a link: email, list ids (400), unknown lists (404)', async () => {
    const invalid = async (body: unknown) => {
      const res = await makeLink(body);
      expect(res.status).toBe(400);
      return res.body.detail.invalids as { field: string; reason: string }[];
    };
    expect(await invalid({})).toEqual([{ field: 'email', reason: 'is required' }]);
    expect(await invalid({ email: 'not-an-email' })).toEqual([
      { field: 'email', reason: 'must be an email address' },
    ]);
    expect(await invalid({ email: 'a@x.com', list_ids: 'promo' })).toEqual([
      { field: 'list_ids', reason: 'must be an array of list ids' },
    ]);
    expect(await invalid({ email: 'a@x.com', list_ids: [''] })).toEqual([
      { field: 'list_ids', reason: 'must be an array of list ids' },
    ]);
    const unknown = await makeLink({ email: 'a@x.com', list_ids: ['promo', 'nope'] });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toEqual({ message: 'list not found: nope' });
  });

  it('shows a confirmation page (GET): escaped values, a form that POSTs, a strict CSP; changes nothing', async () => {
    const email = `o'<b>&"x@example.com`;
    const res = await makeLink({ email, list_ids: ['news_i_'] });
    expect(res.status).toBe(201);
    const page = await p.http().get(local(res.body.url as string));
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toMatch(
      /^default-src 'none'; style-src 'sha256-[^']+'; form-action 'self'/,
    );
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.text).toContain('o&#39;&lt;b&gt;&amp;&quot;x@example.com');
    expect(page.text).toContain('<strong>News &lt;i&gt;</strong>');
    expect(page.text).not.toContain('<b>');
    expect(page.text).toMatch(
      /<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">/,
    );
  });

  it('a one-click POST (no key) unsubscribes from the listed lists; the history and events record it', async () => {
    await subscribeAll('bob@x.com');
    const link = await makeLink({ email: 'bob@x.com', list_ids: ['news_i_'] });
    const res = await oneClick(local(link.body.url as string));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ unsubscribed: { email: 'bob@x.com', list_ids: ['news_i_'] } });
    const after = await eventually(async () => {
      const s = await statusOf('bob@x.com');
      if (membership(s).news_i_) throw new Error('not yet');
      return s;
    });
    expect(after.opted_in).toBe(true);
    expect(membership(after).promo).toBe(true);

    // Scaled out, the read waits for the processor to finish its work, then stops it for the read.
    const { history, events } = await readStore(
      p,
      acc.id,
      async (query) => {
        const rows = await query<Record<string, unknown>>(
          "SELECT list_id, subscribed, identifier_kind, identifier_value, api_key, source FROM {db}.consent_history WHERE identifier_value = 'bob@x.com' AND api_key = 'unsubscribe-link'",
        );
        if (rows.length < 1) throw new Error('no row yet');
        const events = await query<{ type: string; action: string; list_id: string; subscribed: boolean }>(
          "SELECT type, action, list_id, subscribed FROM {db}.events WHERE identifiers['email'] = 'bob@x.com' AND subscribed = false",
        );
        return { history: rows, events };
      },
      { timeoutMs: 15_000 },
    );
    expect(history).toEqual([
      {
        list_id: 'news_i_',
        subscribed: false,
        identifier_kind: 'email',
        identifier_value: 'bob@x.com',
        api_key: 'unsubscribe-link',
        source: 'subscriptions',
      },
    ]);
    expect(events).toEqual([{ type: 'list', action: 'subscribe', list_id: 'news_i_', subscribed: false }]);
  });

  it('a link without lists opts the address out globally; from a browser the answer is a page', async () => {
    await subscribeAll('cat@x.com');
    const link = await makeLink({ email: 'cat@x.com' });
    const res = await p
      .http()
      .post(local(link.body.url as string))
      .set('accept', 'text/html')
      .field('List-Unsubscribe', 'One-Click'); // multipart/form-data, which RFC 8058 allows too
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toContain('<strong>cat@x.com</strong> is unsubscribed from every message');
    const after = await eventually(async () => {
      const s = await statusOf('cat@x.com');
      if (s.opted_in) throw new Error('not yet');
      return s;
    });
    // Opting out keeps list memberships (overridden by the opt-out).
    expect(membership(after)).toMatchObject({ svc_all: false, news_i_: true, promo: true });
  });

  it('refuses a changed link (400), one signed with another secret (400) and an expired one (410)', async () => {
    const link = await makeLink({ email: 'dan@x.com', list_ids: ['promo'] });
    const path = local(link.body.url as string);
    const token = path.slice(path.indexOf('=') + 1);
    const [payload, signature] = token.split('.') as [string, string];
    // Another address in the payload, the signature kept.
    const forged = Buffer.from(
      Buffer.from(payload, 'base64url').toString('utf8').replace('dan@x.com', 'eve@x.com'),
    ).toString('base64url');
    const flipped = signature.slice(0, -2) + (signature.at(-2) === 'A' ? 'B' : 'A') + signature.at(-1);
    const now = Date.now();
    const claims = { account: acc.id, email: 'dan@x.com', listIds: ['promo'] };
    const refused = [
      [`${forged}.${signature}`, 400],
      [`${payload}.${flipped}`, 400],
      [`${payload}`, 400],
      [
        signUnsubscribeToken('another-secret-of-thirty-two-characters!', {
          ...claims,
          expiresAt: now + 60_000,
        }),
        400,
      ],
      // A link made in the past whose time is up (the clock is the link's: no waiting).
      [signUnsubscribeToken(SECRET, { ...claims, expiresAt: now - 1 }), 410],
    ] as const;
    for (const [bad, status] of refused) {
      const url = `/v3/lists/unsubscribe?token=${bad}`;
      for (const res of [await oneClick(url), await p.http().get(url)]) {
        expect(res.status).toBe(status);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.body.detail.message).toBe(
          status === 410 ? 'this unsubscribe link has expired' : 'this is not a valid unsubscribe link',
        );
      }
    }
    expect((await p.http().post('/v3/lists/unsubscribe').send({})).status).toBe(400);
    // Only the link takes a form: anywhere else a form body is still a 415.
    const elsewhere = await p
      .http()
      .post('/v3/lists/subscriptions')
      .set('x-api-key', acc.publicKey)
      .set('content-type', 'application/x-www-form-urlencoded')
      .send('List-Unsubscribe=One-Click');
    expect(elsewhere.status).toBe(415);
    // The same claims signed with the deployment's secret and still valid: accepted.
    const fresh = signUnsubscribeToken(SECRET, { ...claims, expiresAt: now + 60_000 });
    expect((await oneClick(`/v3/lists/unsubscribe?token=${fresh}`)).status).toBe(200);
  });
});
