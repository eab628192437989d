import { Tracker } from './tracker.js';
import { settle, testWindow } from './test-window.js';

const LANDING = 'https://shop.example/lamps?utm_source=news&utm_medium=email&utm_campaign=spring';

function tracker(url = LANDING, referrer = 'https://mail.example/') {
  const t = testWindow(url, referrer);
  const svc = new Tracker(t.win, { trackerId: 'pub', apiHost: 'https://cdp.example/', batchSize: 100 });
  const records = async () => {
    svc.flush();
    await settle();
    return t.net.sent.map((s) => ({ path: s.url.replace('https://cdp.example', ''), body: s.body }));
  };
  return { ...t, svc, records };
}

describe('Tracker', () => {
  it('sends events with the inferred fields, the vuid, and the caller fields split into identifiers and data', async () => {
    const { svc, records, close, win } = tracker();
    svc.event('pageview');
    svc.event('product', {
      action: 'add_to_cart',
      product_id: 'p1',
      email: 'ann@example.com',
      page: '/custom',
    });
    const [sent] = await records();
    expect(sent!.path).toBe('/v3/events');
    const [pageview, product] = sent!.body as Record<string, Record<string, unknown>>[];
    const vuid = svc.getVuid();
    expect(pageview).toMatchObject({
      type: 'pageview',
      identifiers: { vuid },
      data: {
        channel: 'web',
        ua: win.navigator.userAgent,
        title: 'Test page',
        hostname: 'shop.example',
        page: '/lamps',
        referrer: 'https://mail.example/',
        source: 'news',
        medium: 'email',
        campaign: 'spring',
        language: win.navigator.language,
        character_set: 'UTF-8',
        landing: true,
      },
    });
    expect(pageview!.action).toBeUndefined();
    expect(pageview!.data!.days_since_last_visit).toBeUndefined();
    expect(Math.abs((pageview!.data!.ts as number) - Date.now() / 1000)).toBeLessThan(60);
    expect(product).toMatchObject({
      type: 'product',
      action: 'add_to_cart',
      identifiers: { vuid, email: 'ann@example.com' },
      data: { product_id: 'p1', page: '/custom' },
    });
    expect(product!.data!.email).toBeUndefined();
    await close();
  });

  it('keeps the vuid in a cookie and in localStorage, restores the cookie from the copy, and renews it on anonymize', async () => {
    const { svc, win, close } = tracker();
    const vuid = svc.getVuid();
    expect(vuid).toMatch(/^[0-9a-f]{32}$/);
    expect(win.document.cookie).toContain(`vuid=${vuid}`);
    expect(win.localStorage.getItem('vuid')).toBe(JSON.stringify(vuid));

    win.document.cookie = 'vuid=; max-age=0; path=/';
    expect(win.document.cookie).not.toContain(`vuid=${vuid}`);
    const again = new Tracker(win, { trackerId: 'pub', apiHost: 'https://cdp.example' });
    expect(again.getVuid()).toBe(vuid);
    expect(win.document.cookie).toContain(`vuid=${vuid}`);

    again.anonymize();
    expect(again.getVuid()).not.toBe(vuid);
    expect(win.document.cookie).toContain(`vuid=${again.getVuid()}`);
    await close();
  });

  it('subscribe: validation first; a problem calls error and sends nothing', async () => {
    const { svc, records, close } = tracker();
    const outcomes: string[] = [];
    const callbacks = {
      success: () => outcomes.push('success'),
      error: (e: Error) => outcomes.push(`error: ${e.message}`),
    };
    svc.subscribe({ list_id: 'news', email: 'not-an-email', ...callbacks });
    svc.subscribe({ list_id: '', email: 'ann@example.com', ...callbacks });
    svc.subscribe({ list_id: ['news', ''], email: 'ann@example.com', ...callbacks });
    svc.unsubscribe({ list_id: [], email: 'ann@example.com', ...callbacks });
    svc.subscribe({ list_id: 'news', email: '', ...callbacks });
    expect(outcomes).toEqual([
      'error: email must be a non-empty email address',
      'error: list_id must be a non-empty string or an array of non-empty strings',
      'error: list_id must be a non-empty string or an array of non-empty strings',
      'error: list_id must be a non-empty string or an array of non-empty strings',
      'error: email must be a non-empty email address',
    ]);
    expect(await records()).toEqual([]);
    await close();
  });

  it('subscribe: the profile with the further fields, one update per list, then success', async () => {
    const { svc, records, close } = tracker();
    const outcomes: string[] = [];
    svc.subscribe({
      list_id: ['news', 'offers'],
      email: ' ann@example.com ',
      first_name: 'Ann',
      success: () => outcomes.push('success'),
      error: () => outcomes.push('error'),
    });
    svc.unsubscribe({ list_id: 'offers', email: 'ann@example.com' });
    expect(outcomes).toEqual(['success']);
    const sent = await records();
    await settle();
    const all = [...sent, ...(await records()).slice(sent.length)];
    const update = (list_id: string, subscribed: boolean) =>
      expect.objectContaining({ list_id, email: 'ann@example.com', subscribed });
    expect(all.map((s) => [s.path, s.body])).toEqual([
      [
        '/v3/profiles',
        [{ attributes: { first_name: 'Ann', email: 'ann@example.com', vuid: svc.getVuid() } }],
      ],
      ['/v3/lists/subscriptions', [update('news', true), update('offers', true)]],
      ['/v3/profiles', [{ attributes: { email: 'ann@example.com', vuid: svc.getVuid() } }]],
      ['/v3/lists/subscriptions', [update('offers', false)]],
    ]);
    // Each update carries the page's fields and the further fields, for its list/subscribe event.
    expect(all[1]!.body[0]).toMatchObject({
      channel: 'web',
      page: '/lamps',
      source: 'news',
      landing: true,
      first_name: 'Ann',
    });
    expect(all[1]!.body[0]).not.toHaveProperty('ts');
    await close();
  });

  it('consent goes to POST /v3/consent with the reason, time and event data; an email is linked to the vuid first', async () => {
    const { svc, records, close } = tracker();
    expect(svc.consent({ consent: false, identifier_field_name: 'vuid', identifier_value: 'v1' })).toBe(
      false,
    );
    expect(svc.consent({ consent: true, identifier_field_name: 'email', identifier_value: 'ann-at' })).toBe(
      false,
    );
    const before = Date.now() / 1000;
    expect(
      svc.consent({
        consent: true,
        identifier_field_name: 'email',
        identifier_value: ' ann@example.com ',
        update_reason: 'signup form',
        update_ts: 1_700_000_000,
        event_data: { form: 'footer' },
      }),
    ).toBe(true);
    // The original SDK's defaults: the field is email; a time in milliseconds is read as such.
    expect(
      svc.consent({ consent: false, identifier_value: 'ann@example.com', update_ts: 1_700_000_500_000 }),
    ).toBe(true);
    expect(
      svc.consent({ consent: true, identifier_field_name: 'phone', identifier_value: '+4712345678' }),
    ).toBe(true);
    svc.customer({ customer_id: 'c1' }, { city: 'Oslo' });
    svc.entity('product', { product_id: 'p1', name: 'Lamp' });
    const paths: [string, unknown][] = [];
    for (let i = 0; i < 5; i++) {
      const sent = await records();
      paths.splice(0, paths.length, ...sent.map((s) => [s.path, s.body] as [string, unknown]));
    }
    const vuid = svc.getVuid();
    const phone = (paths[3]![1] as Record<string, unknown>[])[1]!;
    expect(phone.consent_update_ts).toBeGreaterThanOrEqual(before);
    expect(phone.consent_update_ts).toBeLessThanOrEqual(Date.now() / 1000);
    expect(paths).toEqual([
      ['/v3/profiles', [{ attributes: { email: 'ann@example.com', vuid } }]],
      [
        '/v3/consent',
        [
          {
            identifier_field_name: 'email',
            identifier_value: 'ann@example.com',
            consent: true,
            consent_update_reason: 'signup form',
            consent_update_ts: 1_700_000_000,
            event_data: { form: 'footer' },
          },
        ],
      ],
      ['/v3/profiles', [{ attributes: { email: 'ann@example.com', vuid } }]],
      [
        '/v3/consent',
        [
          {
            identifier_field_name: 'email',
            identifier_value: 'ann@example.com',
            consent: false,
            consent_update_ts: 1_700_000_500,
          },
          {
            identifier_field_name: 'phone',
            identifier_value: '+4712345678',
            consent: true,
            consent_update_ts: phone.consent_update_ts,
          },
        ],
      ],
      ['/v3/profiles', [{ attributes: { city: 'Oslo', customer_id: 'c1', vuid } }]],
      ['/v3/objects/product', [{ product_id: 'p1', name: 'Lamp' }]],
    ]);
    await close();
  });
});
