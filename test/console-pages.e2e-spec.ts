import type { Browser, Page } from 'playwright-core';
import { launchChromium, screenshot } from './support/browser.js';
import { EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';

/**
 * The console's customer, segments, overview and exports pages (issues 33, 34) in Debian's Chromium, on the embedded
 * wiring: one platform, one browser. Screenshots go to test-results/screenshots/.
 */
const WAIT = 15_000;
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();
const HOSTILE = '<img src=x onerror="document.title=\'pwned\'">';

// One wiring: the pages are served by the API process alike on both; one browser journey is enough.
describe('console pages: customers, segments, overview, exports (embedded)', () => {
  let p: EmbeddedPlatform;
  let account: TestAccount;
  let base: string;
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];

  const call = async (path: string, body: unknown, key = account.publicKey, method = 'POST') => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const accepted = async (path: string, body: unknown) => expect((await call(path, body)).status).toBe(202);
  const profile = (query: string) =>
    fetch(`${base}/v3/profiles?${query}`, { headers: { 'x-api-key': account.privateKey } });
  const inPage = <T = unknown>(expression: string) => page.evaluate<T>(expression);
  /** Each series of a drawn chart (`[data-chart=<name>]`'s uPlot) summed over its points, by label. */
  const chartTotals = (chart: string) =>
    inPage<Record<string, number>>(`(() => {
      const u = document.querySelector('[data-chart=${chart}]')?.uplot;
      if (!u) return {};
      const out = {};
      u.series.forEach((s, n) => { if (n > 0) out[s.label] = u.data[n].reduce((a, b) => a + (b ?? 0), 0); });
      return out;
    })()`);
  const go = async (title: string, path: string) => {
    await page.getByRole('link', { name: title, exact: true }).click();
    await page.waitForURL(new RegExp(`/console/${path}$`));
  };
  const find = async (kind: string, value: string, alias?: string) => {
    const form = page.getByTestId('find-customer');
    await form.getByLabel('Identifier').selectOption(kind);
    if (alias !== undefined) await form.getByLabel('Alias name').fill(alias);
    await form.getByLabel('Value').fill(value);
    await form.getByLabel('Value').press('Enter');
  };
  const shownCustomer = async (found: string) => {
    await page.locator(`[data-testid=customer]`).getByText(found).first().waitFor({ timeout: WAIT });
    return page.getByTestId('customer').getAttribute('data-customer');
  };
  /** Nothing a value carried became markup or ran. */
  const inert = async () => {
    expect(
      await inPage(`({
        imgs: document.querySelectorAll('main img').length,
        scripts: [...document.querySelectorAll('script')].map((s) => s.getAttribute('src')),
        title: document.title,
      })`),
    ).toEqual({ imgs: 0, scripts: ['/console/assets/app.js'], title: 'CDP console' });
    expect(dialogs).toEqual([]);
  };

  beforeAll(async () => {
    p = await EmbeddedPlatform.start();
    await p.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(p.app.getHttpServer().address() as { port: number }).port}`;
    account = await p.createAccount('Pages shop');
    expect(
      (
        await call(
          '/v3/schema/identifiers',
          { name: 'loyalty_id', display_name: 'Loyalty ID', merge_confidence: 'high' },
          account.privateKey,
        )
      ).status,
    ).toBe(201);
    expect(
      (
        await call(
          '/v3/schema/objects/customers/fields',
          { name: 'tier', display_name: 'Tier', type: 'string' },
          account.privateKey,
        )
      ).status,
    ).toBe(201);
    expect(
      (
        await call(
          '/v3/schema/objects/events/fields',
          { name: 'note', display_name: 'Note', type: 'string' },
          account.privateKey,
        )
      ).status,
    ).toBe(201);
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(`${base}/console`);
    await page.getByLabel('Private key').fill(account.privateKey);
    await page.keyboard.press('Enter');
    await page.getByTestId('signout').waitFor({ timeout: WAIT });
  });
  afterAll(async () => {
    await browser?.close();
    await p?.close();
  });

  it('finds a customer by each identifier kind, with attributes, orders and an inert hostile value', async () => {
    const ann = {
      email: 'ann@pages.io',
      customer_id: 'c-ann',
      vuid: 'ann-cookie',
      svc_alias_crm: 'crm-17',
      loyalty_id: 'L-900',
    };
    await accepted('/v3/profiles', {
      attributes: { ...ann, first_name: HOSTILE, tier: '<b>gold</b>' },
    });
    await accepted('/v3/events', [
      { type: 'account', action: 'login', identifiers: { email: ann.email }, data: { note: HOSTILE } },
      {
        type: 'order',
        action: 'purchase',
        identifiers: { email: ann.email },
        data: {
          ts: daysAgo(3),
          order: {
            order_id: 'o-1',
            total: 30,
            subtotal: 30,
            items: [{ product_id: 'mug', price: 10, quantity: 3 }],
          },
        },
      },
      {
        type: 'order',
        action: 'purchase',
        identifiers: { email: ann.email },
        data: {
          ts: daysAgo(1),
          order: {
            order_id: 'o-2',
            total: 12.5,
            subtotal: 12.5,
            items: [{ product_id: 'tea', price: 12.5, quantity: 1 }],
          },
        },
      },
    ]);
    await eventually(async () => (await profile('email=ann%40pages.io')).status === 200);
    await go('Customers', 'customers');
    await find('email', ann.email);
    const id = await shownCustomer(ann.email);
    for (const [kind, value, alias] of [
      ['customer_id', ann.customer_id],
      ['vuid', ann.vuid],
      ['alias', ann.svc_alias_crm, 'crm'],
      ['loyalty_id', ann.loyalty_id],
    ] as const) {
      await find(kind, value, alias);
      await page
        .getByTestId('customer')
        .getByText(new RegExp(`Found by \\S+ ${value}`))
        .waitFor({ timeout: WAIT });
      expect(await page.getByTestId('customer').getAttribute('data-customer')).toBe(id);
    }
    const attributes = page.getByTestId('attributes');
    expect(await attributes.locator('[data-attribute=tier]').textContent()).toBe('tiercustom<b>gold</b>');
    expect(await attributes.locator('[data-attribute=first_name]').textContent()).toContain(HOSTILE);
    const kinds = await page.getByTestId('identifier').evaluateAll((rows) => rows.map((r) => r.dataset.kind));
    expect(new Set(kinds)).toEqual(new Set(['email', 'customer_id', 'vuid', 'svc_alias_crm', 'loyalty_id']));
    // The timeline: newest first (the login, sent now, then the two orders by their times), with items
    // and the running total.
    const events = page.getByTestId('event');
    await events.nth(2).waitFor({ timeout: WAIT });
    const heads = await events.locator('summary').allTextContents();
    expect(heads[0]).toContain('account · login');
    expect(heads[1]).toMatch(/order · purchase · order o-2 total 12.5 · spent so far 42.5/);
    expect(heads[2]).toMatch(/order o-1 total 30 · spent so far 30/);
    await events.nth(1).locator('summary').click();
    expect(await events.nth(1).getByTestId('items').textContent()).toMatch(/tea\s*12.5\s*1/);
    await events.nth(0).locator('summary').press('Enter');
    expect(await events.nth(0).getByTestId('event-json').textContent()).toContain(JSON.stringify(HOSTILE));
    await inert();
    await screenshot(page, 'console-customers-1280');
  });

  it('shows a merged customer with both identifiers and the merge that joined them', async () => {
    const login = (identifiers: Record<string, string>) =>
      accepted('/v3/events', [{ type: 'account', action: 'login', identifiers }]);
    await login({ email: 'bo@pages.io' });
    await login({ vuid: 'bo-cookie' });
    await eventually(async () => (await profile('vuid=bo-cookie')).status === 200);
    await login({ email: 'bo@pages.io', vuid: 'bo-cookie' });
    await find('vuid', 'bo-cookie');
    await eventually(async () => {
      await find('vuid', 'bo-cookie');
      await page.getByTestId('customer').waitFor({ timeout: WAIT });
      return (await page.getByTestId('merge').count()) === 1;
    });
    const values = await page.getByTestId('identifier').locator('td:nth-child(2)').allTextContents();
    expect(values.sort()).toEqual(['bo-cookie', 'bo@pages.io']);
    const merge = await page.getByTestId('merge').textContent();
    const survivor = await page.getByTestId('customer').getAttribute('data-customer');
    expect(merge).toMatch(new RegExp(`\\S+ merged into ${survivor} by a record with .*email:bo@pages.io`));
    expect(merge).toContain('vuid:bo-cookie');
    await screenshot(page, 'console-customer-merged-1280');
  });

  it('shows a redacted customer as redacted', async () => {
    await accepted('/v3/profiles', { attributes: { email: 'cy@pages.io', first_name: 'Cy' } });
    await eventually(async () => (await profile('email=cy%40pages.io')).status === 200);
    expect(
      (await call('/v3/optout', { requester: 'dpo@pages.io', email: 'cy@pages.io' }, account.privateKey))
        .status,
    ).toBe(202);
    await eventually(async () => {
      await find('email', 'cy@pages.io');
      await page.getByTestId('customer').waitFor({ timeout: WAIT });
      return (await page.getByTestId('redacted').count()) === 1;
    });
    expect(await page.getByTestId('attributes').textContent()).not.toContain('Cy');
  });

  it('lists, creates, edits and deletes segments, refusing a definition as the API does', async () => {
    await go('Segments', 'segments');
    await page.getByText('No segment yet.').waitFor({ timeout: WAIT });
    const form = page.getByTestId('segment-form');
    const create = async (id: string, name: string, definition: unknown) => {
      await page.getByTestId('new-segment').click();
      await form.getByLabel('Id').fill(id);
      await form.getByLabel('Name').fill(name);
      await form.getByLabel(/^Definition/).fill(JSON.stringify(definition));
      await form.getByRole('button', { name: 'Create segment' }).click();
    };
    // A definition naming no customer field: the page shows what POST /v3/segments answers.
    const bad = { customer: { field: 'no_such_field', operator: '=', value: 'x' } };
    const api = await call(
      '/v3/segments',
      { id: 'bad_one', name: 'Bad', definition: bad },
      account.privateKey,
    );
    expect(api.status).toBeGreaterThanOrEqual(400);
    await create('bad_one', 'Bad', bad);
    const detail = api.body.detail as { message?: string; invalids?: { field: unknown; reason: string }[] };
    const expected =
      detail.message ?? detail.invalids!.map((i) => `${String(i.field)}: ${i.reason}`).join('; ');
    expect(await form.getByTestId('segment-answer').textContent()).toContain(expected);
    await form.getByRole('button', { name: 'Cancel' }).click();
    // Two purchases in 30 days (Ann's, sent above), a hostile name; and one nobody is in.
    await create('two_orders', HOSTILE, {
      events: [{ type: 'order', action: 'purchase', within_days: 30, min_count: 2 }],
    });
    await page.locator('[data-segment=two_orders]').waitFor({ timeout: WAIT });
    await create('never_bought', 'Never bought', {
      customer: { field: 'email', operator: 'like', value: '%@pages.io' },
      events: [{ type: 'order', action: 'purchase', within_days: 30, max_count: 0 }],
    });
    await page.locator('[data-segment=never_bought]').waitFor({ timeout: WAIT });
    expect(await page.locator('[data-segment=two_orders] [data-testid=segment-name]').textContent()).toBe(
      HOSTILE,
    );
    // Edited from the keyboard: Tab to its Edit button, change the name, save with Enter.
    await page.getByRole('button', { name: 'Edit Never bought' }).focus();
    await page.keyboard.press('Enter');
    await form.getByLabel('Name').fill('No purchase yet');
    await form.getByLabel('Name').press('Enter');
    await page.locator('[data-segment=never_bought]').getByText('No purchase yet').waitFor({ timeout: WAIT });
    const listed = (await (
      await fetch(`${base}/v3/segments/never_bought`, { headers: { 'x-api-key': account.privateKey } })
    ).json()) as { segment: { name: string } };
    expect(listed.segment.name).toBe('No purchase yet');
    // Deleted after a confirmation.
    await create('to_delete', 'To delete', { events: [{ type: 'x', within_days: 1 }] });
    await page.getByRole('button', { name: 'Delete To delete' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.locator('[data-segment=to_delete]').waitFor({ state: 'detached', timeout: WAIT });
    expect(
      (await fetch(`${base}/v3/segments/to_delete`, { headers: { 'x-api-key': account.privateKey } })).status,
    ).toBe(404);
    expect(await page.getByTestId('segment').count()).toBe(2);
    // Each segment's size, as GET /v3/segments/{id}/size counts it: Ann alone bought twice; of the
    // customers with an @pages.io email, all but her bought nothing.
    const size = async (id: string) =>
      (
        (await (
          await fetch(`${base}/v3/segments/${id}/size`, { headers: { 'x-api-key': account.privateKey } })
        ).json()) as { customers: number }
      ).customers;
    expect(await size('two_orders')).toBe(1);
    await page.reload();
    for (const id of ['two_orders', 'never_bought'])
      expect(
        Number(await page.locator(`[data-segment=${id}] [data-testid=segment-size]`).textContent()),
      ).toBe(await size(id));
    await inert();
    await screenshot(page, 'console-segments-1280');
  });

  it('shows the segments a customer is in, as GraphQL answers them', async () => {
    await go('Customers', 'customers');
    await find('email', 'ann@pages.io');
    const panel = page.getByTestId('customer-segments');
    await panel.waitFor({ timeout: WAIT });
    expect(await panel.locator('li').evaluateAll((li) => li.map((l) => l.dataset.segment))).toEqual([
      'two_orders',
    ]);
    expect(await panel.textContent()).toContain(HOSTILE);
    // The same answer as POST /v3/graphql's audiences for her.
    const graphql = await call(
      '/v3/graphql',
      {
        query: 'query { customer(email: "ann@pages.io") { audiences { edges { node { name state } } } } }',
      },
      account.privateKey,
    );
    const edges = (
      graphql.body as {
        data: { customer: { audiences: { edges: { node: { name: string; state: string } }[] } } };
      }
    ).data.customer.audiences.edges;
    expect(edges.filter((e) => e.node.state === 'qualified').map((e) => e.node.name)).toEqual(['two_orders']);
    // Bo bought nothing: he is in the other one.
    await find('email', 'bo@pages.io');
    await page
      .locator('[data-testid=customer-segments] [data-segment=never_bought]')
      .waitFor({ timeout: WAIT });
    await inert();
  });

  it('charts the records rejected per minute by type, and the top reasons, as the API answered them', async () => {
    // Five records refused for one reason (no identifier), in one batch; then a batch where one record is
    // invalid and the other is refused with it.
    const noIds = (type: string) => ({ type, action: 'try' });
    const first = await call('/v3/events', [
      ...Array.from({ length: 5 }, () => noIds('rej_a')),
      noIds(HOSTILE),
    ]);
    expect(first.status).toBe(400);
    const second = await call('/v3/events', [
      { type: 'rej_b', action: 'try', identifiers: { email: 'rb@pages.io' }, data: { ts: 'not a time' } },
      { type: 'rej_b', action: 'try', identifiers: { email: 'rb@pages.io' } },
    ]);
    expect(second.status).toBe(400);
    const reasonOf = (answer: { body: Record<string, unknown> }, index: number) => {
      const invalid = (
        answer.body.detail as { invalids: { event?: number; field: unknown; reason: string }[] }
      ).invalids.find((i) => i.event === index)!;
      return `${Array.isArray(invalid.field) ? invalid.field.join(' or ') : String(invalid.field)}: ${invalid.reason}`;
    };
    await go('Overview', 'overview');
    const rejected = () => chartTotals('rejected');
    // Counted by the API, stored every 5 s, read again by the page every 10 s.
    await eventually(async () => {
      const drawn = await rejected();
      return drawn.rej_a === 5 && drawn.rej_b === 2 && drawn[HOSTILE] === 1;
    }, 40_000);
    const rows = await page
      .getByTestId('reason')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
      );
    const row = (type: string, reason: string) =>
      rows.find((r) => r[2] === type && r[1] === reason && r[3] === 'rejected');
    expect(row('rej_a', reasonOf(first, 0))?.[0]).toBe('5');
    expect(row('rej_b', reasonOf(second, 0))?.[0]).toBe('1');
    expect(row('rej_b', 'refused with its batch: another record was invalid')?.[0]).toBe('1');
    expect(row(HOSTILE, reasonOf(first, 5))?.[0]).toBe('1');
    await inert();
  });

  it('draws events per minute by type from the store, the points matching the counts sent', async () => {
    const batch = (type: string, n: number) =>
      Array.from({ length: n }, (_, i) => ({
        type,
        action: 'tick',
        identifiers: { email: `c${i}@chart.io` },
      }));
    await accepted('/v3/events', [...batch('chart_a', 7), ...batch('chart_b', 3), ...batch(HOSTILE, 1)]);
    await go('Overview', 'overview');
    const series = () => chartTotals('events');
    // The page asks again every 10 s: the chart catches up with the processor without a reload.
    await eventually(async () => {
      const drawn = await series();
      return drawn.chart_a === 7 && drawn.chart_b === 3;
    }, 30_000);
    // Every point is one minute of the last hour.
    const points = await inPage<number>(`document.querySelector('[data-chart=events]').uplot.data[0].length`);
    expect(points).toBe(60);
    expect(Number(await page.locator('[data-total=events]').textContent())).toBeGreaterThanOrEqual(14);
    expect(Number(await page.locator('[data-total=orders]').textContent())).toBe(2);
    expect(await page.locator('[data-total=revenue]').textContent()).toBe('42.5');
    // Revenue by day: a bar for each day with a purchase.
    expect(
      await inPage(`document.querySelector('[data-chart=revenue]').uplot.data[1].filter((v) => v !== null)`),
    ).toEqual([30, 12.5]);
    await page.getByTestId('backlog').waitFor();
    await page.locator('[data-chart=lag] canvas').waitFor();
    await page.getByRole('button', { name: 'Last day' }).click();
    await eventually(async () => {
      const n = await inPage<number>(
        `document.querySelector('[data-chart=events]')?.uplot?.data[0].length ?? 0`,
      );
      return n === 1440;
    });
    expect((await series()).chart_a).toBe(7);
    // A type carrying markup is a legend label as text.
    expect(await page.locator('[data-chart=events] .u-legend').textContent()).toContain(HOSTILE);
    await inert();
    await screenshot(page, 'console-overview-1280');
  });

  it('starts an export from the page, refuses a bad select as the API does, and downloads the file', async () => {
    await go('Exports', 'exports');
    const form = page.getByTestId('start-export');
    // A select naming no field of the object: the same answer as POST /v3/exports.
    const bad = { format: 'CSV', select: { object: 'customers', fields: ['no_such_field'] } };
    const api = await call('/v3/exports', bad, account.privateKey);
    expect(api.status).toBe(404);
    await form.getByLabel('A select').check();
    await form.locator('select[name=object]').selectOption('customers');
    await form.getByLabel(/^Fields/).fill('no_such_field');
    await form.getByRole('button', { name: 'Start export' }).click();
    const answer = form.getByTestId('export-answer');
    await answer.waitFor({ timeout: WAIT });
    const detail = api.body.detail as { message?: string; invalids?: { field: unknown; reason: string }[] };
    const expected =
      detail.message ?? detail.invalids!.map((i) => `${String(i.field)}: ${i.reason}`).join('; ');
    expect(await answer.textContent()).toContain(expected);
    // Whole objects: events, CSV.
    await form.getByLabel('Whole objects').check();
    await form.getByLabel(/Events/).check();
    await form.getByRole('button', { name: 'Start export' }).click();
    await answer.filter({ hasText: 'started' }).waitFor({ timeout: WAIT });
    const done = page.locator('[data-testid=export][data-state=completed]');
    await done.first().waitFor({ timeout: 60_000 });
    const file = done
      .first()
      .getByTestId('download')
      .filter({ hasText: /\.csv$/ })
      .first();
    const [download] = await Promise.all([page.waitForEvent('download'), file.click()]);
    const path = await download.path();
    const { readFileSync } = await import('node:fs');
    const csv = readFileSync(path, 'utf8');
    expect(csv).toContain('chart_a');
    expect(csv).toContain('ann@pages.io');
    // The link is short-lived and signed: changed, it is refused.
    const link = (await (
      await page.request.get(
        `${base}/console/api/exports/${await done.first().getAttribute('data-id')}/link?file=${encodeURIComponent((await file.textContent())!)}`,
      )
    ).json()) as { url: string; expires_at: string };
    expect(Date.parse(link.expires_at) - Date.now()).toBeLessThanOrEqual(300_000);
    expect((await fetch(`${base}${link.url}`)).status).toBe(200);
    // A signature that differs from the real one in every character (replacing one character could keep it).
    const forged = link.url.replace(
      /signature=([^&]*)/,
      (_m: string, sig: string) => `signature=${[...sig].map((c) => (c === 'a' ? 'b' : 'a')).join('')}`,
    );
    expect((await fetch(`${base}${forged}`)).status).toBe(403);
    await screenshot(page, 'console-exports-start-1280');

    // A segment's members, started through the console's own route as the page's script calls it: the
    // same export as POST /v3/exports with select.segment (an existing segment, not a 404).
    const { csrf } = (await (await page.request.get(`${base}/console/api/session`)).json()) as {
      csrf: string;
    };
    const bySegment = await page.request.post(`${base}/console/api/exports`, {
      headers: { 'x-csrf-token': csrf, origin: base },
      data: { format: 'CSV', select: { object: 'customers', segment: 'two_orders', fields: ['email'] } },
    });
    expect(bySegment.status()).toBe(202);
    const missing = await page.request.post(`${base}/console/api/exports`, {
      headers: { 'x-csrf-token': csrf, origin: base },
      data: { format: 'CSV', select: { object: 'customers', segment: 'no_such_segment', fields: ['email'] } },
    });
    expect(missing.status()).toBe(404);
  });

  it('works on a phone-sized window, from the keyboard', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [title, path] of [
      ['Overview', 'overview'],
      ['Customers', 'customers'],
      ['Segments', 'segments'],
      ['Exports', 'exports'],
    ] as const) {
      await go(title, path);
      await page.locator('main h1').waitFor();
      if (path === 'customers') {
        // Tab to the search form and find a customer without the mouse.
        await page.getByTestId('find-customer').getByLabel('Identifier').focus();
        await page.keyboard.press('Tab');
        await page.keyboard.type('ann@pages.io');
        await page.keyboard.press('Enter');
        await page.getByTestId('event').first().waitFor({ timeout: WAIT });
      }
      if (path === 'overview') await page.locator('[data-chart=events] canvas').waitFor({ timeout: WAIT });
      if (path === 'segments') await page.getByTestId('segment').first().waitFor({ timeout: WAIT });
      expect(await inPage<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await screenshot(page, `console-${path}-phone`);
    }
    await inert();
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});
