import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshot } from './support/browser.js';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { type Platform, WIRINGS } from './support/wirings.js';
import { completedExport } from './support/exports.js';
import { postWithKey } from './support/api-calls.js';

/** The connection the browser and the test use is trusted as a proxy, so X-Forwarded-For can be tested. */
const ENV = { CDP_TRUSTED_PROXIES: '127.0.0.1', CDP_EXPORT_POLL_MS: '50' };
const UTM = 'utm_source=newsletter&utm_medium=email&utm_campaign=spring&utm_content=hero&utm_term=red+lamps';
const BAD_EMAIL = 'ann-at-example';
const EMAIL = 'ann@example.com';
const CONSENT_TS = 1_760_000_000;

type Row = Record<string, string>;

/** The platform's address as a browser reaches it: the embedded app listens on a port of its own. */
async function baseUrl(p: Platform): Promise<string> {
  if (!(p instanceof EmbeddedPlatform)) return p.api.baseUrl;
  if (!p.app.getHttpServer().address()) await p.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(p.app.getHttpServer().address() as { port: number }).port}`;
}

/**
 * A shop on another origin (`localhost`, the platform is on `127.0.0.1`) tagged with the snippet a site
 * pastes (README "Browser SDK"): calls made before the script loads are queued and replayed.
 */
function shopPage(title: string, api: string, trackerId: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>
<script>
(function (w, d, src) {
  var svc = (w.svc = w.svc || { q: [] });
  ['initialize', 'event', 'customer', 'entity', 'consent', 'subscribe', 'unsubscribe', 'anonymize', 'flush']
    .forEach(function (m) { svc[m] = svc[m] || function () { svc.q.push([m, [].slice.call(arguments)]); }; });
  var s = d.createElement('script'); s.async = true; s.src = src; d.head.appendChild(s);
})(window, document, '${api}/sdk/v1/svc.js');
svc.initialize({ trackerId: '${trackerId}' });
svc.event('pageview');
</script></head><body>
<h1>${title}</h1>
<p><a id="next" href="/lamps">Lamps</a></p>
<button id="add" onclick="svc.event('product', {action: 'add_to_cart', product_id: 'lamp-1'})">Add to cart</button>
<button id="detail" onclick="svc.event('product', {action: 'detail', product_id: 'lamp-2'})">Details</button>
<form id="subscribe"><input id="email" placeholder="email"><button>Subscribe</button></form>
<p id="status"></p>
<script>
document.getElementById('subscribe').onsubmit = function (e) {
  e.preventDefault();
  var status = document.getElementById('status');
  svc.subscribe({
    list_id: 'newsletter', email: document.getElementById('email').value, first_name: 'Ann',
    success: function () { status.textContent = 'subscribed'; },
    error: function (err) { status.textContent = 'error: ' + err.message; },
  });
};
</script></body></html>`;
}

/** A page that imports the ES module build from the platform instead of pasting the snippet. */
function modulePage(api: string, trackerId: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Module</title></head><body>
<script type="module">
import { createTracker } from '${api}/sdk/v1/svc.mjs';
const svc = createTracker({ trackerId: '${trackerId}', apiHost: '${api}' });
svc.event('module_check');
svc.flush();
window.moduleVuid = svc.getVuid();
window.svcModule = svc;
</script></body></html>`;
}

describe.each(WIRINGS)('browser SDK (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;
  let api: string;
  let shop: Server;
  let shopUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    [p, browser] = await Promise.all([start(ENV), launchChromium()]);
    acc = await p.createAccount();
    api = await baseUrl(p);
    await postWithKey(p, acc.privateKey, '/v3/lists', { name: 'Newsletter' }).expect(201);
    shop = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const pages: Record<string, () => string> = {
        '/landing': () => shopPage('Landing', api, acc.publicKey),
        '/lamps': () => shopPage('Lamps', api, acc.publicKey),
        '/module': () => modulePage(api, acc.publicKey),
      };
      const page = pages[path ?? ''];
      if (!page) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page());
    });
    await new Promise<void>((resolve) => shop.listen(0, 'localhost', resolve));
    shopUrl = `http://localhost:${(shop.address() as { port: number }).port}`;
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => shop?.close(resolve));
    await p?.close();
  }, 30_000);

  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    fetch(api + path, { method: 'POST', body: JSON.stringify(body), headers });

  it('serves the SDK at a versioned path: cacheable, revalidated by ETag, with a source map and an ES module', async () => {
    const script = await fetch(`${api}/sdk/v1/svc.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^application\/javascript/);
    expect(script.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(script.headers.get('access-control-allow-origin')).toBe('*');
    const etag = script.headers.get('etag')!;
    const code = Buffer.from(await script.arrayBuffer());
    expect(gzipSync(code, { level: 9 }).length).toBeLessThanOrEqual(8 * 1024);
    expect(code.toString()).toContain('sourceMappingURL=svc.js.map');

    const again = await fetch(`${api}/sdk/v1/svc.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    const map = (await (await fetch(`${api}/sdk/v1/svc.js.map`)).json()) as { sources: string[] };
    expect(map.sources.some((s) => s.endsWith('sdk/browser/src/tracker.ts'))).toBe(true);
    const esm = await fetch(`${api}/sdk/v1/svc.mjs`);
    expect(await esm.text()).toMatch(/export\s*\{[^}]*createTracker/);
    expect((await fetch(`${api}/sdk/v1/nope.js`)).status).toBe(404);
  });

  it('answers the preflights of public-key routes for any origin, and not those of private-key routes', async () => {
    const preflight = (path: string, method = 'POST') =>
      fetch(api + path, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://shop.example',
          'access-control-request-method': method,
          'access-control-request-headers': 'content-type,x-api-key,idempotency-key',
        },
      });
    for (const path of [
      '/v3/events',
      '/v3/profiles',
      '/v3/lists/subscriptions',
      '/v3/objects/products',
      '/v3/consent',
    ]) {
      const res = await preflight(path);
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('access-control-allow-headers')).toContain('idempotency-key');
      expect(res.headers.get('access-control-allow-headers')).toContain('x-api-key');
      expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThanOrEqual(7200);
    }
    expect((await preflight('/v3/lists', 'GET')).status).toBe(204);
    for (const [path, method] of [
      ['/v3/exports', 'POST'],
      ['/v3/profiles', 'GET'],
      ['/v3/optout', 'POST'],
    ] as const) {
      const res = await preflight(path, method);
      expect(res.status).not.toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it('never takes a private key from another site’s page or from a URL', async () => {
    const event = { type: 'key_check', identifiers: { email: EMAIL } };
    const json = { 'content-type': 'application/json' };
    const fromShop = { ...json, origin: 'https://shop.example' };
    const refused = await post('/v3/events', event, { ...fromShop, 'x-api-key': acc.privateKey });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      title: 'Forbidden',
      status: 403,
      detail: { message: expect.stringContaining('never accepted from a browser') },
    });
    const inUrl = await fetch(`${api}/v3/events?api_key=${encodeURIComponent(acc.privateKey)}`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify(event),
    });
    expect(inUrl.status).toBe(403);

    const accepted = await post('/v3/events', event, { ...fromShop, 'x-api-key': acc.publicKey });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('access-control-allow-origin')).toBe('*');
    expect(accepted.headers.get('access-control-expose-headers')).toContain('retry-after');
    // Servers send no Origin: the private key works there as ever.
    expect((await post('/v3/events', event, { ...json, 'x-api-key': acc.privateKey })).status).toBe(202);
  });

  it('takes ip from the connection (through trusted proxies), never from the body of a public-key request', async () => {
    const json = { 'content-type': 'application/json' };
    const event = (type: string) => ({ type, identifiers: { email: EMAIL }, data: { ip: '6.6.6.6' } });
    expect(
      (await post('/v3/events', event('ip_public'), { ...json, 'x-api-key': acc.publicKey })).status,
    ).toBe(202);
    const proxied = { ...json, 'x-api-key': acc.publicKey, 'x-forwarded-for': '6.6.6.6, 203.0.113.7' };
    expect((await post('/v3/events', event('ip_proxied'), proxied)).status).toBe(202);
    expect(
      (await post('/v3/events', event('ip_private'), { ...json, 'x-api-key': acc.privateKey })).status,
    ).toBe(202);
  });

  it('takes a beacon: text/plain, key and idempotency id in the query; the same beacon twice is stored once', async () => {
    const body = JSON.stringify([{ type: 'beacon_check', identifiers: { vuid: 'beacon-vuid' } }]);
    const url = `${api}/v3/events?api_key=${acc.publicKey}&idempotency_key=beacon-1`;
    const send = () =>
      fetch(url, { method: 'POST', body, headers: { 'content-type': 'text/plain;charset=UTF-8' } });
    const first = await send();
    expect(first.status).toBe(202);
    const second = await send();
    expect(second.status).toBe(202);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('z-request-id')).toBe(first.headers.get('z-request-id'));
    // text/plain stays refused where no beacon is meant.
    const plain = await fetch(`${api}/v3/events`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'text/plain', 'x-api-key': acc.publicKey },
    });
    expect(plain.status).toBe(415);
    // The consent route is public by its `@Auth('public')` alone: a beacon reaches it as well.
    const consentBeacon = await fetch(
      `${api}/v3/consent?api_key=${acc.publicKey}&idempotency_key=beacon-consent-1`,
      {
        method: 'POST',
        body: JSON.stringify([
          { identifier_field_name: 'email', identifier_value: 'beacon@example.com', consent: true },
        ]),
        headers: { 'content-type': 'text/plain;charset=UTF-8', origin: 'https://shop.example' },
      },
    );
    expect(consentBeacon.status).toBe(202);
    expect(consentBeacon.headers.get('access-control-allow-origin')).toBe('*');
  });

  it(
    'a visitor: lands from a campaign, browses, adds to cart, subscribes (a bad email first), goes offline and ' +
      'back, closes the page with events queued; the platform has every event once with the inferred fields',
    async () => {
      const context: BrowserContext = await browser.newContext();
      const bodies: string[] = [];
      context.on('request', (r) => {
        if (r.url().startsWith(api)) bodies.push(r.postData() ?? '');
      });
      const page: Page = await context.newPage();
      await page.goto(`${shopUrl}/landing?${UTM}`);
      const vuid = await page.waitForFunction(() => window.svc.getVuid?.());
      const id = (await vuid.jsonValue()) as string;
      expect(await page.evaluate(() => document.cookie)).toContain(`vuid=${id}`);
      const ua = await page.evaluate(() => navigator.userAgent);
      const language = await page.evaluate(() => navigator.language);
      await screenshot(page, 'sdk-landing');

      await Promise.all([page.waitForURL(`${shopUrl}/lamps`), page.click('#next')]);
      await page.waitForFunction(() => window.svc.getVuid?.());
      await page.click('#add');

      await page.fill('#email', BAD_EMAIL);
      await page.click('#subscribe button');
      await page.waitForSelector('#status:text("error: email must be a non-empty email address")');
      await screenshot(page, 'sdk-subscribe-error');
      await page.fill('#email', EMAIL);
      await page.click('#subscribe button');
      await page.waitForSelector('#status:text("subscribed")');
      await screenshot(page, 'sdk-subscribed');
      // The visitor ticks a marketing-consent box: the email's channel opt-in, with reason and time.
      expect(
        await page.evaluate(
          ([email, ts]) =>
            window.svc.consent({
              consent: true,
              identifier_field_name: 'email',
              identifier_value: email,
              update_reason: 'footer checkbox',
              update_ts: ts,
              event_data: { campaign: 'footer' },
            }),
          [EMAIL, CONSENT_TS] as const,
        ),
      ).toBe(true);

      // Offline: the batch fails and waits in localStorage; back online, it goes.
      await context.setOffline(true);
      await page.click('#detail');
      await page.evaluate(() => window.svc.flush());
      await eventually(() => page.evaluate(storedFailures), 15_000, 100);
      await screenshot(page, 'sdk-offline');
      await context.setOffline(false);

      // Closing with events queued (the batch timer has not fired): they leave with keepalive.
      const queuedAtClose = await page.evaluate(() => {
        const { svc } = window;
        svc.event('navigation', { action: 'search', search_term: 'lamp', category: 'Lighting' });
        svc.event('product', { action: 'remove_from_cart', product_id: 'lamp-1' });
        // Read in the same task: the batch timer (a second) cannot have sealed them yet.
        return Object.keys(localStorage)
          .filter((k) => k.startsWith('svc_outbox_'))
          .reduce(
            (n, k) => n + (JSON.parse(localStorage.getItem(k)!) as { items: unknown[] }).items.length,
            0,
          );
      });
      expect(queuedAtClose).toBe(2);
      await page.close({ runBeforeUnload: true });

      // Another visitor's page uses the ES module build.
      const other = await browser.newContext();
      const modulePage = await other.newPage();
      await modulePage.goto(`${shopUrl}/module`);
      const moduleVuid = (await (
        await modulePage.waitForFunction(() => window.moduleVuid)
      ).jsonValue()) as string;
      // From now on this page's fetch fails (keepalive included): the event can only leave by the beacon
      // the SDK falls back to when the page closes.
      await modulePage.evaluate(() => {
        window.fetch = () => Promise.reject(new TypeError('refused'));
        window.svcModule!.event('beacon_fallback');
      });
      await modulePage.close({ runBeforeUnload: true });

      // The profile the subscription wrote, found by the browser's vuid.
      await eventually(async () => {
        const res = await p.http().get('/v3/profiles').query({ vuid: id }).set('x-api-key', acc.privateKey);
        expect(res.status).toBe(200);
        expect(res.body.attributes).toMatchObject({ email: EMAIL, first_name: 'Ann', opted_in: true });
      }, 30_000);
      // The consent the page gave, as the consent API reads it (the reason and time the SDK sent).
      const consent = await p
        .http()
        .get('/v3/consent/email')
        .query({ id: EMAIL })
        .set('x-api-key', acc.privateKey);
      expect(consent.status).toBe(200);
      expect(consent.body).toEqual({
        identifier_field_name: 'email',
        identifier_value: EMAIL,
        consent: true,
        consent_update_reason: 'footer checkbox',
        consent_update_ts: CONSENT_TS,
      });
      await eventually(async () => {
        const subs = await p
          .http()
          .get('/v3/lists/subscriptions')
          .query({ email: EMAIL })
          .set('x-api-key', acc.privateKey);
        expect(subs.body.subscriptions).toContainEqual({
          list_id: 'newsletter',
          name: 'Newsletter',
          subscribed: true,
        });
      });

      const key = (r: Row) => `${r.type}/${r.action}/${r.page}/${r.product_id}`;
      const expected = [
        'pageview///landing/',
        'pageview///lamps/',
        'product/add_to_cart//lamps/lamp-1',
        'product/detail//lamps/lamp-2',
        'navigation/search//lamps/',
        'product/remove_from_cart//lamps/lamp-1',
      ];
      const rows = await eventually(
        async () => {
          const all = await exportEvents();
          const missing = expected.filter((k) => !all.some((r) => r.channel === 'web' && key(r) === k));
          if (!all.some((r) => r.type === 'list')) missing.push('list/subscribe');
          if (!all.some((r) => r.type === 'consent')) missing.push('consent/opt-in');
          if (!all.some((r) => r.type === 'module_check')) missing.push('module_check');
          if (!all.some((r) => r.type === 'beacon_fallback')) missing.push('beacon_fallback');
          if (missing.length) throw new Error(`missing ${missing.join(', ')} in ${all.map(key).join(', ')}`);
          return all;
        },
        45_000,
        200,
      );
      const web = rows.filter(
        (r) => r.channel === 'web' && ['pageview', 'product', 'navigation'].includes(r.type!),
      );

      expect(web.map(key).sort()).toEqual([...expected].sort()); // each once, nothing else
      for (const r of web) {
        expect(JSON.parse(r.identifiers!)).toEqual({ vuid: id });
        expect(r).toMatchObject({
          ua,
          hostname: 'localhost',
          language,
          character_set: 'UTF-8',
          ip: '127.0.0.1',
          source: 'newsletter',
          medium: 'email',
          campaign: 'spring',
          content: 'hero',
          keywords: 'red lamps',
          days_since_last_visit: '',
        });
        const landingPage = r.page === '/landing';
        expect(r.landing).toBe(landingPage ? 'true' : 'false');
        expect(r.title).toBe(landingPage ? 'Landing' : 'Lamps');
        expect(r.referrer).toBe(landingPage ? '' : `${shopUrl}/landing?${UTM}`);
      }
      const lists = rows.filter((r) => r.type === 'list');
      expect(lists).toHaveLength(1);
      // The subscription's event: the update, with the page's fields the SDK sent beside it.
      expect(lists[0]).toMatchObject({
        action: 'subscribe',
        list_id: 'newsletter',
        subscribed: 'true',
        channel: 'web',
        page: '/lamps',
        hostname: 'localhost',
        source: 'newsletter',
        campaign: 'spring',
        landing: 'false',
      });
      expect(JSON.parse(lists[0]!.identifiers!)).toEqual({ email: EMAIL });
      // The consent's event, once, with its event_data as sent (the beacon check's consent is another's).
      const consents = rows.filter((r) => r.type === 'consent' && r.identifiers!.includes(EMAIL));
      expect(consents).toHaveLength(1);
      expect(consents[0]).toMatchObject({ action: 'opt-in', campaign: 'footer' });
      expect(JSON.parse(consents[0]!.identifiers!)).toEqual({ email: EMAIL });
      // The bad email never left the page.
      expect(bodies.some((b) => b.includes(BAD_EMAIL))).toBe(false);

      // The API checks of this suite, in the same export.
      const one = (type: string) => {
        const found = rows.filter((r) => r.type === type);
        expect(found).toHaveLength(1);
        return found[0]!;
      };
      expect(one('ip_public').ip).toBe('127.0.0.1');
      expect(one('ip_proxied').ip).toBe('203.0.113.7');
      expect(one('ip_private').ip).toBe('6.6.6.6');
      expect(one('beacon_check').ip).toBe('127.0.0.1');
      expect(rows.filter((r) => r.type === 'key_check')).toHaveLength(2);
      const moduleEvent = one('module_check');
      expect(JSON.parse(moduleEvent.identifiers!)).toEqual({ vuid: moduleVuid });
      expect(moduleEvent).toMatchObject({
        channel: 'web',
        page: '/module',
        title: 'Module',
        landing: 'true',
      });
      await Promise.all([context.close(), other.close()]);
    },
    90_000,
  );

  /** Every event of the account, through an export (CSV), as a person checking the platform reads it. */
  async function exportEvents(): Promise<Row[]> {
    const exported = await completedExport(p, acc.privateKey, { objects: ['events'] });
    return exported
      .manifest()
      .files.flatMap((f) => parse<Row>(readFileSync(exported.fileOf(f)), { columns: true }));
  }
});

// Functions passed to page.evaluate run in the page, where these exist.
declare const window: SvcWindow;
declare const document: { cookie: string };
declare const navigator: { userAgent: string; language: string };
declare const localStorage: { getItem(key: string): string | null };

interface SvcWindow {
  moduleVuid?: string;
  svcModule?: SvcWindow['svc'];
  fetch: () => Promise<unknown>;
  svc: {
    getVuid?: () => string;
    flush: () => void;
    event: (type: string, fields?: object) => void;
    consent: (options: object) => boolean;
  };
}

/** Runs in the page: whether a batch the SDK keeps in localStorage has failed at least once. */
function storedFailures(): boolean {
  return Object.keys(localStorage)
    .filter((k) => k.startsWith('svc_outbox_'))
    .some((k) =>
      (JSON.parse(localStorage.getItem(k)!) as { batches: { attempt: number }[] }).batches.some(
        (b) => b.attempt > 0,
      ),
    );
}
