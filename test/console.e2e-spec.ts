import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Buckets } from '@cdp/buckets';
import { Inspector } from '@cdp/inspector';
import { launchChromium, screenshot } from './support/browser.js';
import { ADMIN_TOKEN, EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';

/**
 * The console in Debian's Chromium, on the embedded wiring: sign in, watch records arrive in the event
 * inspector with their verdicts, and use the account pages. Every wait is for something the page shows
 * (Playwright's waitFor), never a sleep. Screenshots of each page at 1280×800 and phone size go to
 * test-results/screenshots/.
 */
const PAGES = [
  'inspector',
  'keys',
  'apis',
  'objects',
  'lists',
  'exports',
  'recommendations',
  'activity',
] as const;
const WAIT = 10_000;
const TITLES = {
  inspector: 'Event inspector',
  keys: 'Keys',
  apis: 'APIs',
  objects: 'Objects & fields',
  lists: 'Lists',
  exports: 'Exports',
  recommendations: 'Recommendations',
  activity: 'Activity log',
} as const;

// One wiring: the console is served by the API process alike on both; the cross-process fan-out is the last suite.
describe('console in a browser (embedded)', () => {
  let p: EmbeddedPlatform;
  let account: TestAccount;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const dialogs: string[] = [];

  const send = (path: string, body: unknown, key = account.publicKey) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const admin = (path: string, method: string, body: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  /** Runs an expression in the page (a string: this file is type-checked without the DOM library). */
  const inPage = <T = unknown>(expression: string) => page.evaluate<T>(expression);
  const row = (text: string) => page.locator('[data-testid=row]', { hasText: text });
  const go = async (name: (typeof PAGES)[number]) => {
    await page.getByRole('link', { name: TITLES[name], exact: true }).click();
    await page.waitForURL(new RegExp(`/console/${name}$`));
  };

  beforeAll(async () => {
    // The loader looks at the incoming bucket often, so that a dropped file shows up quickly.
    p = await EmbeddedPlatform.start({ CDP_LOADER_POLL_MS: '50' });
    await p.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(p.app.getHttpServer().address() as { port: number }).port}`;
    account = await p.createAccount('Browser shop');
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  });
  afterAll(async () => {
    await browser?.close();
    await p?.close();
  });

  it('signs in with the private key, from the keyboard', async () => {
    await page.goto(`${base}/console`);
    await page.getByLabel('Private key').waitFor({ timeout: WAIT });
    await screenshot(page, 'console-signin-1280');
    await page.getByLabel('Private key').fill(`${account.publicKey}.wrong`);
    await page.keyboard.press('Enter');
    await page.getByTestId('signin-error').waitFor({ timeout: WAIT });
    await page.getByLabel('Private key').fill(account.privateKey);
    await page.keyboard.press('Enter');
    await page.getByTestId('live').filter({ hasText: 'live' }).waitFor({ timeout: WAIT });
    // The key is in no storage the page can read, and the session cookie is not readable by script.
    const stored = await inPage<string>(
      'JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie',
    );
    expect(stored).not.toContain(account.privateKey.split('.')[1]);
    expect(await inPage<string>('document.cookie')).toBe('');
  });

  it('shows events sent by HTTP as they arrive, newest on top, with the customer they resolved to', async () => {
    expect(
      (
        await send('/v3/events', [
          {
            type: 'product',
            action: 'add_to_cart',
            identifiers: { email: 'alice@shop.io' },
            data: { product_id: 'p1', colour: 'red' },
          },
        ])
      ).status,
    ).toBe(202);
    const alice = row('alice@shop.io');
    await alice.waitFor({ timeout: WAIT });
    expect(await alice.getAttribute('data-verdict')).toBe('accepted');
    await alice.getByText(/dropped: colour/).waitFor({ timeout: WAIT });
    await alice.getByTestId('resolution').filter({ hasText: 'created' }).waitFor({ timeout: WAIT });
    expect(
      (
        await send('/v3/events', [
          { type: 'pageview', action: 'view', identifiers: { email: 'bob@shop.io' } },
        ])
      ).status,
    ).toBe(202);
    await row('bob@shop.io').waitFor({ timeout: WAIT });
    const order = await page.getByTestId('row').allTextContents();
    expect(order[0]).toContain('pageview');
    // A second event of alice's resolves to the same customer, not a new one.
    expect(
      (
        await send('/v3/events', [
          { type: 'account', action: 'login', identifiers: { email: 'alice@shop.io' } },
        ])
      ).status,
    ).toBe(202);
    const again = page.locator('[data-testid=row]', { hasText: 'account · login' });
    await again.getByTestId('resolution').waitFor({ timeout: WAIT });
    const first = (await row('add_to_cart').getByTestId('resolution').textContent())!.match(
      /customer (\S+)/,
    )![1]!;
    expect(await again.getByTestId('resolution').textContent()).toContain(first);
    expect(await again.getByTestId('resolution').textContent()).not.toContain('created');
    await screenshot(page, 'console-inspector-1280');
  });

  it('shows when a record merged two customers', async () => {
    const login = (identifiers: Record<string, string>) =>
      send('/v3/events', [{ type: 'account', action: 'login', identifiers }]);
    expect((await login({ email: 'nia@shop.io', vuid: 'nia-cookie' })).status).toBe(202);
    expect((await login({ email: 'nia.work@shop.io' })).status).toBe(202);
    await row('nia.work@shop.io')
      .getByTestId('resolution')
      .filter({ hasText: 'created' })
      .waitFor({ timeout: WAIT });
    // One record with the work email and the first one's cookie joins the two customers.
    expect((await login({ email: 'nia.work@shop.io', vuid: 'nia-cookie' })).status).toBe(202);
    const joining = row('nia-cookie').filter({ hasText: 'nia.work@shop.io' });
    await joining.getByTestId('resolution').filter({ hasText: 'merged' }).waitFor({ timeout: WAIT });
    expect(await joining.getByTestId('resolution').textContent()).toMatch(/customer \S+ · merged \S+/);
  });

  it('shows profiles, subscription updates and v2 calls with their kinds', async () => {
    expect(
      (await send('/v3/profiles', { attributes: { email: 'carol@shop.io', first_name: 'Carol' } })).status,
    ).toBe(202);
    expect(
      (await send('/v3/lists/subscriptions', { list_id: 'svc_all', email: 'dave@shop.io', subscribed: true }))
        .status,
    ).toBe(200);
    const v2 = await fetch(`${base}/v2/entities`, {
      method: 'POST',
      headers: { 'svc-tracker-id': account.publicKey, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'product', data: { product_id: 'p-v2', name: 'Mug' } }),
    });
    expect(v2.status).toBe(202);
    await row('carol@shop.io').filter({ hasText: 'POST /v3/profiles' }).waitFor({ timeout: WAIT });
    await row('carol@shop.io')
      .getByTestId('resolution')
      .filter({ hasText: 'created' })
      .waitFor({ timeout: WAIT });
    await row('dave@shop.io').filter({ hasText: 'POST /v3/lists/subscriptions' }).waitFor({ timeout: WAIT });
    await row('POST /v2/entities').filter({ hasText: 'product' }).waitFor({ timeout: WAIT });
  });

  it('shows a rejected batch with its 400 and every invalid with its reason', async () => {
    const res = await send('/v3/events', [
      { type: 'ok', identifiers: { email: 'rejected-batch@shop.io' } },
      { identifiers: { email: 'rejected-batch@shop.io' } },
      { type: 'no-identifiers' },
    ]);
    expect(res.status).toBe(400);
    const rejected = page.locator('[data-testid=row][data-verdict=rejected]', { hasText: 'rejected-batch' });
    await rejected.waitFor({ timeout: WAIT });
    const invalids = await rejected.getByTestId('invalids').textContent();
    expect(invalids).toContain('record 1');
    expect(invalids).toMatch(/type\s*is required/);
    expect(invalids).toContain('record 2');
    expect(invalids).toContain('identifiers');
    expect(await rejected.textContent()).toContain('400');
  });

  it('renders a hostile event body as inert text', async () => {
    const hostile = {
      type: '<img src=x onerror="alert(1)">',
      action: '<script>alert(2)</script>',
      identifiers: { email: 'mallory@shop.io' },
      data: {
        note: '<img src=x onerror="document.title=\'pwned\'">',
        '<b>bold</b>': '<script>alert(3)</script>',
      },
    };
    expect((await send('/v3/events', [hostile])).status).toBe(202);
    const mallory = row('mallory@shop.io');
    await mallory.waitFor({ timeout: WAIT });
    await mallory.locator('.row-head').click();
    await mallory.getByTestId('json').waitFor();
    expect(await mallory.getByTestId('json').textContent()).toContain('<img src=x onerror=');
    expect(await mallory.locator('.row-head').textContent()).toContain('<img src=x onerror="alert(1)">');
    const injected = await inPage(`({
      imgs: document.querySelectorAll('main img').length,
      scripts: [...document.querySelectorAll('script')].map((s) => s.getAttribute('src')),
      bold: document.querySelectorAll('main b').length,
      title: document.title,
    })`);
    expect(injected).toEqual({ imgs: 0, scripts: ['/console/assets/app.js'], bold: 0, title: 'CDP console' });
    expect(dialogs).toEqual([]);
    // And were markup ever inserted, the Content-Security-Policy would refuse to run an inline script.
    const csp = await inPage<{ ran: boolean; violation: string }>(`new Promise((resolve) => {
      document.addEventListener('securitypolicyviolation', (e) =>
        resolve({ ran: window.__injected === true, violation: e.effectiveDirective }), { once: true });
      const s = document.createElement('script');
      s.textContent = 'window.__injected = true';
      document.body.appendChild(s);
    })`);
    expect(csp).toEqual({ ran: false, violation: 'script-src-elem' });
    await screenshot(page, 'console-inspector-hostile-1280');
    await mallory.locator('.row-head').click();
  });

  it('pauses and resumes, holding what arrives while paused', async () => {
    await page.getByTestId('pause').click();
    expect(
      (
        await send('/v3/events', [
          { type: 'held', action: 'while_paused', identifiers: { email: 'paused@shop.io' } },
        ])
      ).status,
    ).toBe(202);
    await page.getByTestId('resume').filter({ hasText: '1 new' }).waitFor({ timeout: WAIT });
    expect(await row('paused@shop.io').count()).toBe(0);
    await page.getByTestId('resume').click();
    await row('paused@shop.io').waitFor({ timeout: WAIT });
  });

  it('filters by type and action, identifier value and verdict', async () => {
    await page.getByTestId('filter-type').fill('product add_to_cart');
    await eventually(async () => (await page.getByTestId('row').count()) === 1);
    expect(await page.getByTestId('row').first().textContent()).toContain('alice@shop.io');
    await page.getByTestId('filter-type').fill('');
    await page.getByTestId('filter-identifier').fill('bob@shop');
    await eventually(async () => (await page.getByTestId('row').count()) === 1);
    await page.getByTestId('filter-identifier').fill('');
    await page.getByTestId('filter-verdict').selectOption('rejected');
    await eventually(async () => {
      const verdicts = await page
        .getByTestId('row')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-verdict')));
      return verdicts.length === 1 && verdicts[0] === 'rejected';
    });
    await page.getByTestId('filter-verdict').selectOption('all');
  });

  it('expands a record and copies it as JSON or as a curl command', async () => {
    const bob = row('bob@shop.io');
    // From the keyboard: a record's head is a button.
    await bob.locator('.row-head').focus();
    await page.keyboard.press('Enter');
    expect(await bob.locator('.row-head').getAttribute('aria-expanded')).toBe('true');
    await bob.getByRole('button', { name: 'Copy as curl' }).click();
    const curl = await bob.getByTestId('copied').inputValue();
    expect(curl).toContain(`curl -X POST '${base}/v3/events'`);
    expect(curl).toContain(`x-api-key: ${account.publicKey}`);
    expect(curl).toContain('bob@shop.io');
    await bob.getByRole('button', { name: 'Copy JSON' }).click();
    expect(JSON.parse(await bob.getByTestId('copied').inputValue())).toMatchObject({ type: 'pageview' });
    await bob.locator('.row-head').click();
    expect(await bob.getByTestId('json').count()).toBe(0);
  });

  it('clears the view; what arrives afterwards shows again', async () => {
    expect(await page.getByTestId('row').count()).toBeGreaterThan(0);
    await page.getByTestId('clear').click();
    await page.getByText('Waiting for records sent to this account…').waitFor({ timeout: WAIT });
    expect(await page.getByTestId('row').count()).toBe(0);
    const after = { type: 'after', action: 'clear', identifiers: { email: 'after-clear@shop.io' } };
    expect((await send('/v3/events', [after])).status).toBe(202);
    await row('after-clear@shop.io').waitFor({ timeout: WAIT });
    expect(await page.getByTestId('row').count()).toBe(1);
  });

  it('shows a bulk file’s records as the loader publishes them, and a rejected file with its reasons', async () => {
    const buckets = p.app.get(Buckets);
    const drop = (name: string, ...lines: string[]) =>
      buckets.write('incoming', `${account.publicKey}/${name}`, `${lines.join('\n')}\n`);
    await drop(
      'svc_events_console.csv',
      'type,action,email,page',
      'pageview,,ann.bulk@files.io,/home',
      'video,play,bob.bulk@files.io,/video',
    );
    // One record of two is invalid (no identifier): above 1%, the file is rejected whole.
    await drop(
      'svc_events_console_bad.csv',
      'type,action,email,page',
      'pageview,,eve.bulk@files.io,/',
      'search,,,/',
    );
    const ann = row('ann.bulk@files.io');
    await ann.waitFor({ timeout: WAIT });
    expect(await ann.getAttribute('data-verdict')).toBe('accepted');
    expect(await ann.textContent()).toContain('bulk incoming/');
    await ann.getByTestId('resolution').filter({ hasText: 'created' }).waitFor({ timeout: WAIT });
    await row('bob.bulk@files.io').filter({ hasText: 'video · play' }).waitFor({ timeout: WAIT });
    const bad = page.locator('[data-testid=row][data-verdict=rejected]', { hasText: 'line 3' });
    await bad.waitFor({ timeout: WAIT });
    expect(await bad.getByTestId('invalids').textContent()).toContain('identifiers');
    const file = page.locator('[data-testid=row][data-verdict=rejected]', {
      hasText: 'svc_events_console_bad.csv',
    });
    await file.filter({ hasText: '50.0% invalid, above 1%' }).waitFor({ timeout: WAIT });
    // Nothing of the rejected file was published: its valid record never shows as accepted.
    expect(await row('eve.bulk@files.io').count()).toBe(0);
    await screenshot(page, 'console-inspector-bulk-1280');
  });

  it('says plainly when it switches to a sample, and at what rate', async () => {
    // One batch of 1000 in one second: more than the 200 a second shown whole.
    const batch = Array.from({ length: 1000 }, (_, i) => ({
      type: 'flood',
      action: 'burst',
      identifiers: { email: `flood-${i}@shop.io` },
    }));
    expect((await send('/v3/events', batch)).status).toBe(202);
    const notice = page.getByTestId('notice');
    await notice.filter({ hasText: 'showing a sample of 1 record in' }).waitFor({ timeout: WAIT });
    expect(await notice.textContent()).toMatch(
      /more than 200 records per second \(about \d+\/s\): showing a sample of 1 record in \d+, at most 200 a second/,
    );
    await row('flood · burst').first().waitFor({ timeout: WAIT });
    // Of the thousand, at most the bound is shown.
    expect(await row('flood · burst').count()).toBeLessThanOrEqual(200);
    await screenshot(page, 'console-inspector-sampling-1280');
  });

  it('revokes a key with a confirmation: it keeps working through its grace time', async () => {
    await go('keys');
    const active = page.locator('[data-testid=key][data-state=active]');
    await active.first().waitFor({ timeout: WAIT });
    const id = (await active.first().locator('code').textContent())!;
    await active.first().getByRole('button', { name: 'Revoke…' }).click();
    await page
      .getByRole('alertdialog')
      .filter({ hasText: `Revoke key ${id}?` })
      .waitFor();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByRole('alertdialog').count()).toBe(0);
    expect(await page.locator('[data-testid=key][data-state=active]').count()).toBe(1);
    await active.first().getByRole('button', { name: 'Revoke…' }).click();
    await page.getByTestId('confirm-yes').click();
    await page
      .locator('[data-testid=key][data-state=revoked]', { hasText: id })
      .filter({ hasText: /(11 h 5\d|12 h 0) min left/ })
      .waitFor({ timeout: WAIT });
    // In its grace time the revoked key still authenticates.
    const graced = await fetch(`${base}/v3/schema/objects`, { headers: { 'x-api-key': account.privateKey } });
    expect(graced.status).toBe(200);
  });

  it('rotates a key with a confirmation, showing the new secret once', async () => {
    await go('keys');
    await page.getByTestId('key').first().waitFor({ timeout: WAIT });
    await screenshot(page, 'console-keys-1280');
    await page.getByTestId('rotate').click();
    await page.getByRole('alertdialog').waitFor();
    await page.getByTestId('confirm-yes').click();
    const secret = await page.getByTestId('new-secret').textContent({ timeout: WAIT });
    await screenshot(page, 'console-keys-rotated-1280');
    expect(secret).toMatch(new RegExp(`^${account.publicKey}\\.`));
    await page
      .locator('[data-testid=key][data-state=revoked]')
      .filter({ hasText: /(11 h 5\d|12 h 0) min left/ })
      .waitFor({ timeout: WAIT });
    expect(await page.locator('[data-testid=key][data-state=active]').count()).toBe(1);
    const withNew = await fetch(`${base}/v3/schema/objects`, { headers: { 'x-api-key': secret! } });
    expect(withNew.status).toBe(200);
    await screenshot(page, 'console-keys-rotated-1280');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.getByTestId('new-secret').count()).toBe(0);
  });

  it('shows each API plan; No Access set by the operator makes that API answer 403', async () => {
    expect(
      (
        await admin(`/admin/v1/accounts/${account.id}/rate-limits`, 'PATCH', {
          events: 'no_access',
          schema: 50,
        })
      ).status,
    ).toBe(200);
    expect(
      (await admin(`/admin/v1/accounts/${account.id}/retention`, 'PUT', { events_days: 90 })).status,
    ).toBe(200);
    await go('apis');
    await page
      .locator('[data-testid=plan][data-family=events][data-plan="No Access"]')
      .waitFor({ timeout: WAIT });
    await page.getByTestId('retention').filter({ hasText: 'Events are kept for 90 days.' }).waitFor();
    await page
      .locator('[data-testid=plan][data-family=schema][data-plan=Custom]', { hasText: '50 requests/s' })
      .waitFor();
    await page.locator('[data-testid=plan][data-family=lists][data-plan=Default]').waitFor();
    await screenshot(page, 'console-apis-1280');
    const refused = await send('/v3/events', [{ type: 'x', identifiers: { email: 'no-access@shop.io' } }]);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { detail: { message: string } }).detail.message).toContain('No Access');
    await admin(`/admin/v1/accounts/${account.id}/rate-limits`, 'PATCH', { events: null, schema: null });
  });

  it('creates a field through the schema service and lists it', async () => {
    await go('objects');
    await page.getByTestId('field').first().waitFor({ timeout: WAIT });
    const form = page.getByTestId('new-field');
    await form.getByLabel('Name', { exact: true }).fill('loyalty_tier');
    await form.getByLabel('Display name').fill('Loyalty tier');
    await form.getByLabel('Type').selectOption('string');
    await form.getByRole('button', { name: 'Create field' }).click();
    await page.locator('[data-testid=field][data-name=loyalty_tier]').waitFor({ timeout: WAIT });
    expect(await page.locator('[data-testid=field][data-name=loyalty_tier]').textContent()).toContain(
      'account',
    );
    const fields = (await (
      await fetch(`${base}/v3/schema/objects/customers/fields`, {
        headers: { 'x-api-key': account.privateKey },
      })
    ).json()) as { name: string }[];
    expect(fields.map((f) => f.name)).toContain('loyalty_tier');
    // A bad field is answered with the schema API's reasons.
    await form.getByLabel('Name', { exact: true }).fill('loyalty_tier');
    await form.getByLabel('Display name').fill('Again');
    await form.getByRole('button', { name: 'Create field' }).click();
    await page.getByTestId('field-message').filter({ hasText: 'already used' }).waitFor({ timeout: WAIT });
    await screenshot(page, 'console-objects-1280');
  });

  it('creates a custom object through the schema service, with its reasons when refused', async () => {
    const form = page.getByTestId('new-object');
    await form.getByLabel('Object name').fill('stores');
    await form.getByLabel('Alias').fill('store');
    await form.getByLabel('Object display name').fill('Stores');
    await form.getByLabel('Primary key field').fill('store_id');
    await form.getByRole('button', { name: 'Create object' }).click();
    await page.getByRole('button', { name: 'Stores custom' }).waitFor({ timeout: WAIT });
    // The new object is selected, with its primary key field.
    const key = page.locator('[data-testid=field][data-name=store_id]');
    await key.waitFor({ timeout: WAIT });
    expect(await key.textContent()).toContain('primary');
    const objects = (await (
      await fetch(`${base}/v3/schema/objects`, { headers: { 'x-api-key': account.privateKey } })
    ).json()) as { name: string }[];
    expect(objects.map((o) => o.name)).toContain('stores');
    await form.getByLabel('Object name').fill('store');
    await form.getByLabel('Alias').fill('shop');
    await form.getByLabel('Object display name').fill('Shops');
    await form.getByLabel('Primary key field').fill('shop_id');
    await form.getByRole('button', { name: 'Create object' }).click();
    await page.getByTestId('object-message').filter({ hasText: 'plural' }).waitFor({ timeout: WAIT });
    await screenshot(page, 'console-objects-new-1280');
    // A built-in object with its relations.
    await page.getByRole('button', { name: 'Events built-in' }).click();
    const relations = page.getByTestId('relations');
    await relations.waitFor({ timeout: WAIT });
    expect(await relations.locator('li').allTextContents()).toEqual(
      expect.arrayContaining(['product → products', 'customer → customers']),
    );
  });

  it('sets the account’s recommendation rules, with the admin API’s reasons when refused', async () => {
    const field = await fetch(`${base}/v3/schema/objects/products/fields`, {
      method: 'POST',
      headers: { 'x-api-key': account.privateKey, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'in_stock', type: 'boolean', display_name: 'In stock' }),
    });
    expect(field.status).toBe(201);
    await go('recommendations');
    const form = page.getByTestId('recommendation-rules');
    await form.waitFor({ timeout: WAIT });
    await form.getByLabel('Excluded categories').fill('Home\nElectronics > Computers');
    await form.getByLabel('Only products with an image').check();
    await form.getByLabel('Lowest price').fill('5');
    await form.getByLabel('Highest price').fill('cheap');
    await form.getByLabel('in_stock').check();
    await form.getByRole('button', { name: 'Save rules' }).click();
    await page
      .getByTestId('rules-message')
      .filter({ hasText: 'max_price: must be a number' })
      .waitFor({ timeout: WAIT });
    await form.getByLabel('Highest price').fill('900');
    await form.getByRole('button', { name: 'Save rules' }).click();
    await page.getByTestId('rules-message').filter({ hasText: 'Saved' }).waitFor({ timeout: WAIT });
    await screenshot(page, 'console-recommendations-1280');
    const rules = {
      exclude_categories: ['Home', 'Electronics > Computers'],
      require_image: true,
      min_price: 5,
      max_price: 900,
      require_true: ['in_stock'],
    };
    const stored = await admin(`/admin/v1/accounts/${account.id}/recommendation-rules`, 'GET', undefined);
    expect(await stored.json()).toEqual({ rules });
    // The page shows what is stored, set either way.
    await admin(`/admin/v1/accounts/${account.id}/recommendation-rules`, 'PUT', { require_price: true });
    await page.reload();
    await form.waitFor({ timeout: WAIT });
    expect(await form.getByLabel('Only products with a price').isChecked()).toBe(true);
    expect(await form.getByLabel('Excluded categories').inputValue()).toBe('');
    await admin(`/admin/v1/accounts/${account.id}/recommendation-rules`, 'PUT', {});
  });

  it('shows lists, exports and the activity log, and every page at phone size and in dark mode', async () => {
    const created = await fetch(`${base}/v3/lists`, {
      method: 'POST',
      headers: { 'x-api-key': account.privateKey, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Newsletter' }),
    });
    const news = ((await created.json()) as { created: { list_id: string } }).created.list_id;
    // Subscribers now: s1, s2 and Mia (under two emails, merged); s3 unsubscribed after subscribing. So 3.
    const subscribe = (email: string, subscribed = true) =>
      send('/v3/lists/subscriptions', { list_id: news, subscribed, email });
    for (const email of ['s1@lists.io', 's2@lists.io', 's3@lists.io']) {
      expect((await subscribe(email)).status).toBe(200);
    }
    expect((await subscribe('s3@lists.io', false)).status).toBe(200);
    // A customer subscribed under two emails, whose two customers are then merged (one cookie seen with
    // both), is one subscriber, not two.
    for (const email of ['mia@lists.io', 'mia.work@lists.io']) {
      expect((await subscribe(email)).status).toBe(200);
    }
    expect(
      (await send('/v3/profiles', { attributes: { email: 'mia@lists.io', first_name: 'Mia' } })).status,
    ).toBe(202);
    for (const email of ['mia@lists.io', 'mia.work@lists.io']) {
      const login = { type: 'account', action: 'login', identifiers: { email, vuid: 'mia-cookie' } };
      expect((await send('/v3/events', [login])).status).toBe(202);
    }
    await eventually(async () => {
      const res = await fetch(`${base}/v3/profiles?email=mia.work%40lists.io`, {
        headers: { 'x-api-key': account.privateKey },
      });
      const body = (await res.json()) as { attributes?: { first_name?: string } };
      return res.status === 200 && body.attributes?.first_name === 'Mia';
    });
    await eventually(async () => {
      const res = await fetch(`${base}/v3/lists/subscriptions?email=s3%40lists.io&include=${news}`, {
        headers: { 'x-api-key': account.privateKey },
      });
      const body = (await res.json()) as { subscriptions: { subscribed: boolean }[] };
      return res.status === 200 && body.subscriptions[0]?.subscribed === false;
    });
    const exported = await fetch(`${base}/v3/exports`, {
      method: 'POST',
      headers: { 'x-api-key': account.privateKey, 'content-type': 'application/json' },
      body: JSON.stringify({ objects: ['events'], format: 'csv' }),
    });
    expect(exported.status).toBe(202);
    const exportId = ((await exported.json()) as { id: string }).id;
    await eventually(async () => {
      const res = await fetch(`${base}/v3/exports/${exportId}`, {
        headers: { 'x-api-key': account.privateKey },
      });
      return ((await res.json()) as { state: string }).state === 'completed';
    });
    // Every object: a long list of files (one per object and the manifest) under a long path.
    const everything = await fetch(`${base}/v3/exports`, {
      method: 'POST',
      headers: { 'x-api-key': account.privateKey, 'content-type': 'application/json' },
      body: JSON.stringify({ format: 'parquet' }),
    });
    const everythingId = ((await everything.json()) as { id: string }).id;
    await eventually(async () => {
      const res = await fetch(`${base}/v3/exports/${everythingId}`, {
        headers: { 'x-api-key': account.privateKey },
      });
      return ((await res.json()) as { state: string }).state === 'completed';
    });
    await go('lists');
    await page
      .getByTestId('lists')
      .getByRole('cell', { name: 'Newsletter', exact: true })
      .waitFor({ timeout: WAIT });
    expect(await page.locator(`[data-list="${news}"]`).getByTestId('subscribers').textContent()).toBe('3');
    expect(await page.locator('[data-list=svc_all]').getByTestId('subscribers').textContent()).toBe('—');
    await screenshot(page, 'console-lists-1280');
    await go('exports');
    // The finished export with its files: the events file(s) and the manifest.
    const finished = page.locator('[data-testid=export][data-state=completed]');
    await finished.getByRole('cell', { name: 'events', exact: true }).waitFor({ timeout: WAIT });
    const files = await finished.getByTestId('export-files').locator('li').allTextContents();
    expect(files).toContain('complete.json');
    expect(files.some((f) => /events.*\.csv/.test(f))).toBe(true);
    // A long file list reads one file a line: its column is not squeezed to a character a line.
    const long = page
      .locator('[data-testid=export][data-state=completed]')
      .filter({ hasText: 'line_items_00000.parquet' });
    const heights = await long
      .getByTestId('export-files')
      .locator('li')
      .evaluateAll((items) => items.map((li) => li.getBoundingClientRect().height));
    expect(heights.length).toBeGreaterThanOrEqual(6);
    for (const h of heights) expect(h).toBeLessThan(30);
    await screenshot(page, 'console-exports-1280');
    // The activity log: the two files dropped earlier, one loaded, one rejected with its reason and errors.
    await go('activity');
    const loaded = page.getByTestId('file').filter({ hasText: 'svc_events_console.csv' });
    await loaded.and(page.locator('[data-state=completed]')).waitFor({ timeout: WAIT });
    expect(await loaded.getByTestId('counts').textContent()).toMatch(/read\s*2\s*loaded\s*2\s*invalid\s*0/);
    const refused = page.getByTestId('file').filter({ hasText: 'svc_events_console_bad.csv' });
    expect(await refused.getAttribute('data-state')).toBe('rejected');
    expect(await refused.getByTestId('rejection').textContent()).toContain('50.0% invalid, above 1%');
    await refused.getByTestId('errors').locator('summary').click();
    expect(await refused.getByTestId('errors').textContent()).toMatch(/line 3 · identifiers/);
    await screenshot(page, 'console-activity-1280');
    await page.setViewportSize({ width: 390, height: 844 });
    for (const name of PAGES) {
      await go(name);
      await page.locator('main h1').waitFor();
      await screenshot(page, `console-${name}-phone`);
    }
    // Nothing overflows sideways on a phone: the page is as wide as the window.
    expect(await inPage<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    const background = () => inPage<string>('getComputedStyle(document.body).backgroundColor');
    const light = await background();
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await background()).not.toBe(light);
    await go('inspector');
    await screenshot(page, 'console-inspector-dark-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    await screenshot(page, 'console-inspector-dark-1280');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('signs out, and the session is dead on the server', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'cdp_console');
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Strict');
    await page.getByTestId('signout').click();
    await page.getByLabel('Private key').waitFor({ timeout: WAIT });
    const replay = await fetch(`${base}/console/api/account`, {
      headers: { cookie: `cdp_console=${cookie!.value}` },
    });
    expect(replay.status).toBe(401);
    // Its inspector stream is closed with it: nobody watches the account, so nothing is inspected.
    await eventually(() => !p.app.get(Inspector).watching(account.id));
    await page.reload();
    await page.getByLabel('Private key').waitFor({ timeout: WAIT });
    expect(dialogs).toEqual([]);
  });
});

/** Scaled out: the API and the processor in their own processes, the fan-out over core NATS. */
// One wiring: API and processor in separate processes (the fan-out over core NATS) exist only scaled out.
describe('event inspector fan-out across processes (scaled out)', () => {
  let p: ScaledPlatform;
  let account: TestAccount;

  beforeAll(async () => {
    p = await ScaledPlatform.start();
    account = await p.createAccount('scaled-inspector');
  });
  afterAll(() => p?.close());

  it('streams the API’s verdicts and the processor’s resolutions to an open console', async () => {
    const signIn = await fetch(p.url('/console/api/session'), {
      method: 'POST',
      headers: { 'x-cdp-console': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ private_key: account.privateKey }),
    });
    expect(signIn.status).toBe(201);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const abort = new AbortController();
    const stream = await fetch(p.url('/console/api/inspector/stream'), {
      headers: { cookie },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const entries: { type: string; request_id?: string; verdict?: string; customer_id?: string }[] = [];
    const reading = (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of stream.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (frame.startsWith('data: ')) entries.push(JSON.parse(frame.slice(6)));
        }
      }
    })().catch(() => undefined);
    try {
      // The processor hears of the open console by a NATS heartbeat: send until its resolution shows.
      await eventually(
        async () => {
          const res = await fetch(p.url('/v3/events'), {
            method: 'POST',
            headers: { 'x-api-key': account.publicKey, 'content-type': 'application/json' },
            body: JSON.stringify([
              { type: 'scaled', action: 'probe', identifiers: { email: 'scaled@shop.io' } },
            ]),
          });
          expect(res.status).toBe(202);
          const id = res.headers.get('z-request-id')!;
          await eventually(() => entries.some((e) => e.type === 'verdict' && e.request_id === id), 3000);
          await eventually(
            () => entries.some((e) => e.type === 'resolution' && e.request_id === id && e.customer_id),
            3000,
          );
          return true;
        },
        30_000,
        100,
      );
      const rejected = await fetch(p.url('/v3/events'), {
        method: 'POST',
        headers: { 'x-api-key': account.publicKey, 'content-type': 'application/json' },
        body: JSON.stringify([{ identifiers: { email: 'scaled@shop.io' } }]),
      });
      expect(rejected.status).toBe(400);
      const id = rejected.headers.get('z-request-id')!;
      await eventually(() => entries.some((e) => e.request_id === id && e.verdict === 'rejected'));
    } finally {
      abort.abort();
      await reading;
    }
  });

  it('reads a customer’s history, the overview and the rejection counts from the store the processor owns (chDB), over NATS', async () => {
    const signIn = await fetch(p.url('/console/api/session'), {
      method: 'POST',
      headers: { 'x-cdp-console': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ private_key: account.privateKey }),
    });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const read = async <T>(path: string) => {
      const res = await fetch(p.url(`/console/api/${path}`), { headers: { cookie } });
      expect(res.status).toBe(200);
      return (await res.json()) as T;
    };
    const customer = await eventually(async () => {
      const view = await read<{ customer: string; history: { links?: { value: string }[] } }>(
        'customers?email=scaled%40shop.io',
      );
      return view.history.links?.some((l) => l.value === 'scaled@shop.io') ? view.customer : false;
    });
    const timeline = await read<{ events: { type: string }[] }>(`customers/${customer}/events`);
    expect(timeline.events.map((e) => e.type)).toContain('scaled');
    const overview = await read<{ events: { type: string; count: number }[] }>('overview?range=hour');
    expect(overview.events.filter((e) => e.type === 'scaled').reduce((n, e) => n + e.count, 0)).toBe(
      timeline.events.filter((e) => e.type === 'scaled').length,
    );
    // The record the API refused above (no type, no identifier kind it knows): counted by the API,
    // stored by the processor that owns chDB (asked over NATS), read back by the overview.
    const counted = await eventually(async () => {
      const view = await read<{
        rejected: { type: string; count: number }[];
        reasons: { type: string; reason: string; records: number }[];
      }>('overview?range=hour');
      return view.rejected.length ? view : false;
    }, 30_000);
    expect(counted.rejected.map((r) => [r.type, r.count])).toEqual([['events', 1]]);
    expect(counted.reasons).toEqual([expect.objectContaining({ type: 'events', records: 1 })]);
  });
});
