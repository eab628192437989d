import { Outbox, UNLOAD_BUDGET } from './outbox.js';
import { settle, storageOf, testWindow } from './test-window.js';

/** Timers the test fires by hand: no test waits for a clock. */
function manualTimers() {
  const due: { run: () => void; ms: number }[] = [];
  return {
    due,
    schedule: (run: () => void, ms: number) => due.push({ run, ms }),
    async fire() {
      for (const t of due.splice(0)) t.run();
      await settle();
    },
  };
}

function outbox(win: Window, timers: ReturnType<typeof manualTimers>, refused: unknown[] = []) {
  return new Outbox({
    win,
    trackerId: 'pub',
    apiHost: 'https://cdp.example',
    maxItems: 3,
    random: () => 0.5,
    schedule: timers.schedule,
    onRefused: (status, path) => refused.push({ status, path }),
  });
}

describe('Outbox', () => {
  it('sends a full batch at once, a partial one when its timer fires, as one request each', async () => {
    const { win, net, close } = testWindow('https://shop.example/');
    const timers = manualTimers();
    const box = outbox(win, timers);
    box.add('/v3/events', { n: 1 });
    await settle();
    expect(net.sent).toHaveLength(0);
    expect(timers.due.map((t) => t.ms)).toEqual([1000]);
    box.add('/v3/events', { n: 2 });
    box.add('/v3/events', { n: 3 });
    await settle();
    expect(net.sent.map((s) => s.body)).toEqual([[{ n: 1 }, { n: 2 }, { n: 3 }]]);
    expect(net.sent[0]).toMatchObject({
      url: 'https://cdp.example/v3/events',
      keepalive: false,
      headers: { 'content-type': 'application/json', 'x-api-key': 'pub' },
    });
    expect(net.sent[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f]{32}$/);
    box.add('/v3/profiles', { attributes: { email: 'a@b.co' } });
    await timers.fire(); // the first timer: nothing left of its batch, the profile goes
    expect(net.sent.map((s) => s.url.replace('https://cdp.example', ''))).toEqual([
      '/v3/events',
      '/v3/profiles',
    ]);
    expect(box.pending()).toEqual({ items: 0, batches: [] });
    await close();
  });

  it('keeps records of different paths in separate requests, in order', async () => {
    const { win, net, close } = testWindow('https://shop.example/');
    const timers = manualTimers();
    const box = outbox(win, timers);
    box.add('/v3/events', { n: 1 });
    box.add('/v3/lists/subscriptions', { list_id: 'l', email: 'a@b.co', subscribed: true });
    box.add('/v3/events', { n: 2 });
    box.flush();
    for (let i = 0; i < 3; i++) await settle();
    expect(net.sent.map((s) => [s.url.replace('https://cdp.example', ''), s.body.length])).toEqual([
      ['/v3/events', 1],
      ['/v3/lists/subscriptions', 1],
      ['/v3/events', 1],
    ]);
    await close();
  });

  it('retries network errors, 429 and 5xx with backoff, with the same key and bytes; drops other 4xx', async () => {
    const { win, net, close } = testWindow('https://shop.example/');
    const timers = manualTimers();
    const refused: unknown[] = [];
    const box = outbox(win, timers, refused);
    net.answer('offline', [429, { 'retry-after': '7' }], 503, 202, 400);
    box.add('/v3/events', { n: 1 });
    box.flush();
    await settle();
    expect(timers.due.map((t) => t.ms)).toEqual([1000, 750]); // the batch timer, then 1 s × (½ + ½·0.5)
    timers.due.splice(0, 1);
    await timers.fire();
    expect(timers.due.map((t) => t.ms)).toEqual([7000]); // Retry-After beats the 1.5 s of attempt 2
    await timers.fire();
    expect(timers.due.map((t) => t.ms)).toEqual([3000]); // attempt 3: 4 s × ¾
    await timers.fire();
    expect(net.sent).toHaveLength(4);
    expect(new Set(net.sent.map((s) => s.headers['idempotency-key'])).size).toBe(1);
    expect(new Set(net.sent.map((s) => JSON.stringify(s.body))).size).toBe(1);
    expect(box.pending().batches).toHaveLength(0);

    box.add('/v3/events', { bad: true });
    box.flush();
    await settle();
    expect(net.sent).toHaveLength(5);
    expect(refused).toEqual([{ status: 400, path: '/v3/events' }]);
    expect(box.pending().batches).toHaveLength(0);
    expect(timers.due.filter((t) => t.ms !== 1000)).toHaveLength(0); // no retry of a 400
    await close();
  });

  it('keeps what is not yet accepted in localStorage: a reload of the tab sends it', async () => {
    const { win, net, close } = testWindow('https://shop.example/');
    const timers = manualTimers();
    net.answer('offline');
    const box = outbox(win, timers);
    box.add('/v3/events', { n: 1 });
    box.flush();
    await settle();
    box.add('/v3/events', { n: 2 }); // queued, not sealed
    const key = net.sent[0]!.headers['idempotency-key'];

    // The same tab loads again (same sessionStorage and localStorage), online.
    const reloaded = outbox(win, manualTimers());
    reloaded.flush();
    for (let i = 0; i < 3; i++) await settle();
    expect(net.sent.slice(1).map((s) => s.body)).toEqual([[{ n: 1 }], [{ n: 2 }]]);
    expect(net.sent[1]!.headers['idempotency-key']).toBe(key);
    await close();
  });

  it('on pagehide sends everything with keepalive within 64 KB, and a later page sends it again under the same keys', async () => {
    const { win, net, close } = testWindow('https://shop.example/');
    const box = outbox(win, manualTimers());
    const big = 'x'.repeat(9000);
    net.answer('offline', 'offline', 'offline', 'offline'); // no answer arrives before the page is gone
    for (let i = 0; i < 9; i++) box.add('/v3/events', { n: i, big }); // three batches of ~27 KB
    box.unload(true);
    await settle();
    const keepalive = net.sent.filter((s) => s.keepalive);
    expect(keepalive.length).toBeGreaterThan(0);
    expect(keepalive.reduce((n, s) => n + JSON.stringify(s.body).length, 0)).toBeLessThanOrEqual(
      UNLOAD_BUDGET,
    );

    // Another tab of the site (its own sessionStorage, the same localStorage) takes the closed tab's batches over.
    const other = testWindow('https://shop.example/other', '', storageOf(win));
    const adopted = outbox(other.win, manualTimers());
    for (let i = 0; i < 4; i++) {
      adopted.flush();
      await settle();
    }
    const sentAgain = other.net.sent;
    expect(sentAgain.flatMap((s) => s.body)).toHaveLength(9);
    expect(sentAgain.slice(0, keepalive.length).map((s) => s.headers['idempotency-key'])).toEqual(
      keepalive.map((s) => s.headers['idempotency-key']),
    );
    await Promise.all([close(), other.close()]);
  });

  it('falls back to a beacon, key and idempotency id in the query, when keepalive is refused', async () => {
    const { win, close } = testWindow('https://shop.example/');
    const beacons: { url: string; type: string }[] = [];
    Object.defineProperty(win, 'fetch', { value: () => Promise.reject(new TypeError('keepalive refused')) });
    Object.defineProperty(win.navigator, 'sendBeacon', {
      value: (url: string, blob: Blob) => beacons.push({ url, type: blob.type }) > 0,
    });
    const box = outbox(win, manualTimers());
    box.add('/v3/events', { n: 1 });
    box.unload(true);
    await settle();
    expect(beacons).toHaveLength(1);
    expect(beacons[0]!.url).toMatch(
      /^https:\/\/cdp\.example\/v3\/events\?api_key=pub&idempotency_key=[0-9a-f]{32}$/,
    );
    expect(beacons[0]!.type).toBe('text/plain');
    await close();
  });
});
