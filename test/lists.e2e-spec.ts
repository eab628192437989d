import { postWithKey } from './support/api-calls.js';
import { expectInvalids } from './support/answers.js';
import type { TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import { readStore } from './support/store-checks.js';
import { loseDerivedState, type Platform, startWithAccount, WIRINGS } from './support/wirings.js';

interface Status {
  customer: Record<string, string>;
  opted_in: boolean;
  subscriptions: { name: string; list_id: string; subscribed: boolean }[];
}

/** Lists, subscriptions and consent on both wirings (spec "Lists and subscriptions"). */
describe.each(WIRINGS)('lists, subscriptions and consent (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    ({ p, acc } = await startWithAccount(start, 'lists'));
    other = await p.createAccount('other');
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  const createList = (name: unknown, key = acc.privateKey) => postWithKey(p, key, '/v3/lists', { name });
  const renameList = (id: string, name: unknown, key = acc.privateKey) =>
    p.http().put(`/v3/lists/${id}`).set('x-api-key', key).send({ name });
  const getLists = (key = acc.publicKey) => p.http().get('/v3/lists').set('x-api-key', key);
  const subscribe = (body: unknown, key = acc.publicKey) =>
    postWithKey(p, key, '/v3/lists/subscriptions', body);
  const status = (query: string, key = acc.privateKey) =>
    p.http().get(`/v3/lists/subscriptions?${query}`).set('x-api-key', key);
  const statusOf = async (query: string): Promise<Status> => {
    const res = await status(query);
    expect(res.status).toBe(200);
    return res.body as Status;
  };
  const membership = (s: Status) => Object.fromEntries(s.subscriptions.map((x) => [x.list_id, x.subscribed]));

  describe('lists', () => {
    it('always has svc_all, and shows the lists to the public key', async () => {
      const res = await getLists(other.publicKey);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        lists: [{ name: 'svc_all', list_id: 'svc_all', created_at: expect.any(String) }],
      });
      expect(Number.isNaN(Date.parse(res.body.lists[0].created_at))).toBe(false);
    });

    it('creates a list whose id derives from its name (201), with the private key only', async () => {
      const res = await createList('Weekly News!');
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ created: { list_id: 'weekly_news_', name: 'Weekly News!' } });
      expect((await createList('Promo')).body).toEqual({ created: { list_id: 'promo', name: 'Promo' } });
      expect((await createList('Denied', acc.publicKey)).status).toBe(403);
      const lists = (await getLists()).body.lists as { list_id: string; name: string; created_at: string }[];
      expect(lists.map((l) => [l.list_id, l.name])).toEqual([
        ['svc_all', 'svc_all'],
        ['weekly_news_', 'Weekly News!'],
        ['promo', 'Promo'],
      ]);
      expect(lists.every((l) => !Number.isNaN(Date.parse(l.created_at)))).toBe(true);
      // Accounts are apart: the other account still has only svc_all.
      expect((await getLists(other.publicKey)).body.lists).toHaveLength(1);
    });

    it('refuses a name already used (ignoring case), also when renaming: 400 "list name must be unique"', async () => {
      const unique = { invalids: [{ field: 'name', reason: 'list name must be unique' }] };
      for (const res of [
        await createList('promo'),
        await createList('svc_all'),
        await renameList('promo', 'WEEKLY NEWS!'),
      ]) {
        expect(res.status).toBe(400);
        expect(res.body.detail).toEqual(unique);
      }
      const blank = await createList('   ');
      expect(blank.status).toBe(400);
      expect(blank.body.detail.invalids[0].field).toBe('name');
      expect((await postWithKey(p, acc.privateKey, '/v3/lists', {})).status).toBe(400);
      expect((await createList('x'.repeat(1025))).status).toBe(400);
      expect((await createList('x'.repeat(1024))).status).toBe(201);
    });

    it('renames a list keeping its id; unknown lists are 404, svc_all is not renamed', async () => {
      expect((await createList('Old Name')).body.created.list_id).toBe('old_name');
      const res = await renameList('old_name', 'New Name');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ updated: { list_id: 'old_name', name: 'New Name' } });
      // The old name is free again; its derived id is taken, so it gets the next one.
      expect((await createList('Old Name')).body.created.list_id).toBe('old_name_2');
      const missing = await renameList('nope', 'X');
      expect(missing.status).toBe(404);
      expect(missing.body.detail).toEqual({ message: 'list not found' });
      expect((await renameList('svc_all', 'Everyone')).status).toBe(400);
      expect((await renameList('old_name', 'Other', acc.publicKey)).status).toBe(403);
      // Another account cannot rename it.
      expect((await renameList('old_name', 'Hijack', other.privateKey)).status).toBe(404);
    });
  });

  describe('subscriptions', () => {
    it('reads an unknown customer as not opted in and on no list, every list and svc_all listed', async () => {
      const s = await statusOf('email=stranger@x.com');
      expect(s.customer).toEqual({ email: 'stranger@x.com' });
      expect(s.opted_in).toBe(false);
      expect(s.subscriptions).toEqual(
        expect.arrayContaining([
          { name: 'svc_all', list_id: 'svc_all', subscribed: false },
          { name: 'Weekly News!', list_id: 'weekly_news_', subscribed: false },
          { name: 'Promo', list_id: 'promo', subscribed: false },
        ]),
      );
      expect(s.subscriptions.every((x) => !x.subscribed)).toBe(true);
    });

    it('answers the spec’s 400s: no identifier (field lists both names), a vuid, and needs the private key', async () => {
      const none = await status('include=promo');
      expect(none.status).toBe(400);
      expect(none.body.detail).toEqual({
        invalids: [{ field: ['email', 'customer_id'], reason: 'one of email or customer_id is required' }],
      });
      const vuid = await status('vuid=v123');
      expect(vuid.status).toBe(400);
      expect(vuid.body.detail.invalids[0].field).toBe('vuid');
      expect(vuid.body.detail.invalids[0].reason).toMatch(/email/);
      expect(vuid.body.detail.invalids[0].reason).toMatch(/customer_id/);
      expect((await status('email=a@x.com', acc.publicKey)).status).toBe(403);
    });

    it('subscribes and unsubscribes (200, echoing each update) and reads it back, with include and exclude', async () => {
      const res = await subscribe({ list_id: 'promo', email: 'Ann@X.com', subscribed: true });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ updates: [{ list_id: 'promo', email: 'Ann@X.com', subscribed: true }] });
      const s = await eventually(async () => {
        const got = await statusOf('email=ann@x.com');
        if (!membership(got).promo) throw new Error('not yet subscribed');
        return got;
      });
      expect(s.customer).toEqual({ email: 'ann@x.com' });
      expect(s.opted_in).toBe(false); // a list subscription is no global opt-in
      expect(membership(s)).toMatchObject({ promo: true, weekly_news_: false, svc_all: false });

      const only = await statusOf('email=ann@x.com&include=promo,svc_all');
      expect(only.subscriptions.map((x) => x.list_id)).toEqual(['svc_all', 'promo']);
      const without = await statusOf('email=ann@x.com&exclude=promo,svc_all');
      expect(without.subscriptions.map((x) => x.list_id)).not.toContain('promo');
      expect(without.subscriptions.map((x) => x.list_id)).not.toContain('svc_all');
      expect(without.subscriptions.length).toBeGreaterThan(0);

      await subscribe({ list_id: 'promo', email: 'ann@x.com', subscribed: false });
      await eventually(async () => membership(await statusOf('email=ann@x.com')).promo === false);
    });

    it('takes a channel opt-in, svc_all, and arrays mixing both; a global opt-out stays explicit', async () => {
      const res = await subscribe([
        { opted_in: true, email: 'bob@x.com' },
        { list_id: 'weekly_news_', email: 'bob@x.com', subscribed: true },
        { list_id: 'svc_all', email: 'cleo@x.com', subscribed: true },
      ]);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        updates: [
          { email: 'bob@x.com', opted_in: true },
          { list_id: 'weekly_news_', email: 'bob@x.com', subscribed: true },
          { list_id: 'svc_all', email: 'cleo@x.com', subscribed: true },
        ],
      });
      const bob = await eventually(async () => {
        const got = await statusOf('email=bob@x.com');
        if (!got.opted_in || !membership(got).weekly_news_) throw new Error('not yet');
        return got;
      });
      expect(membership(bob).svc_all).toBe(true);
      // Adding to svc_all equals opted_in true.
      const cleo = await eventually(async () => {
        const got = await statusOf('email=cleo@x.com');
        if (!got.opted_in) throw new Error('not yet');
        return got;
      });
      expect(membership(cleo).svc_all).toBe(true);

      // Global opt-out: explicit on the profile and in the status; list memberships are kept.
      await subscribe({ opted_in: false, email: 'bob@x.com' });
      const out = await eventually(async () => {
        const got = await statusOf('email=bob@x.com');
        if (got.opted_in) throw new Error('not yet');
        return got;
      });
      expect(membership(out)).toMatchObject({ svc_all: false, weekly_news_: true });
      const profile = await p.http().get('/v3/profiles?email=bob@x.com').set('x-api-key', acc.privateKey);
      expect(profile.status).toBe(200);
      expect(profile.body.attributes).toMatchObject({ email: 'bob@x.com', opted_in: false });
      // Removing from svc_all is the same opt-out; adding again opts in again.
      await subscribe({ list_id: 'svc_all', email: 'cleo@x.com', subscribed: false });
      await eventually(async () => (await statusOf('email=cleo@x.com')).opted_in === false);
      await subscribe({ list_id: 'svc_all', email: 'cleo@x.com', subscribed: true });
      await eventually(async () => (await statusOf('email=cleo@x.com')).opted_in === true);
    });

    it('looks a customer up by customer_id too', async () => {
      await postWithKey(p, acc.publicKey, '/v3/profiles', {
        attributes: { customer_id: 'cust-9', email: 'dora@x.com' },
      });
      await eventually(
        async () =>
          (await p.http().get('/v3/profiles?customer_id=cust-9').set('x-api-key', acc.privateKey)).status ===
          200,
      );
      await subscribe({ list_id: 'promo', email: 'dora@x.com', subscribed: true });
      const s = await eventually(async () => {
        const got = await statusOf('customer_id=cust-9');
        if (!membership(got).promo) throw new Error('not yet');
        return got;
      });
      expect(s.customer).toEqual({ customer_id: 'cust-9' });
    });

    it('answers 400 for a missing list_id, email or subscribed, each named, with the index in an array', async () => {
      const single = await subscribe({ email: 'x@x.com' });
      expect(single.status).toBe(400);
      expect(single.body.detail.invalids).toEqual([
        { field: 'list_id', reason: 'is required' },
        { field: 'subscribed', reason: 'is required' },
      ]);
      const batch = await subscribe([
        { list_id: 'promo', email: 'ok@x.com', subscribed: true },
        { list_id: 'promo', subscribed: true },
        { list_id: 'promo', email: 'x@x.com' },
        { email: 'x@x.com', subscribed: true },
        { opted_in: 'yes', email: 'x@x.com' },
        { opted_in: true, list_id: 'promo', email: 'x@x.com' },
        { list_id: 'promo', email: 'not-an-email', subscribed: true },
      ]);
      expectInvalids(batch, [
        { event: 1, field: 'email', reason: 'is required' },
        { event: 2, field: 'subscribed', reason: 'is required' },
        { event: 3, field: 'list_id', reason: 'is required' },
        { event: 4, field: 'opted_in', reason: expect.any(String) },
        { event: 5, field: ['list_id', 'opted_in'], reason: expect.any(String) },
        { event: 6, field: 'email', reason: expect.any(String) },
      ]);
      expect((await subscribe([])).status).toBe(400);
      // Nothing of a refused request was applied.
      expect(membership(await statusOf('email=ok@x.com')).promo).toBe(false);
    });

    it('takes at most 1000 updates a request', async () => {
      const updates = (n: number) =>
        Array.from({ length: n }, (_, i) => ({
          list_id: 'weekly_news_',
          email: `bulk${i}@x.com`,
          subscribed: true,
        }));
      const over = await subscribe(updates(1001));
      expect(over.status).toBe(400);
      expect(over.body.detail.invalids[0].reason).toMatch(/1000/);
      const full = await subscribe(updates(1000));
      expect(full.status).toBe(200);
      expect(full.body.updates).toHaveLength(1000);
      await eventually(
        async () => membership(await statusOf('email=bulk999@x.com')).weekly_news_ === true,
        30_000,
      );
    });

    it('answers 404 "list not found" for an unknown list, and applies nothing of that request', async () => {
      const res = await subscribe([
        { list_id: 'promo', email: 'eve@x.com', subscribed: true },
        { list_id: 'no_such_list', email: 'eve@x.com', subscribed: true },
      ]);
      expect(res.status).toBe(404);
      expect(res.body.detail.message).toMatch(/^list not found/);
      // Another account's list is no list of this one.
      await postWithKey(p, other.privateKey, '/v3/lists', { name: 'Theirs' });
      expect((await subscribe({ list_id: 'theirs', email: 'eve@x.com', subscribed: true })).status).toBe(404);
      // A later request for the same customer is applied, the refused one never was.
      await subscribe({ list_id: 'weekly_news_', email: 'eve@x.com', subscribed: true });
      const s = await eventually(async () => {
        const got = await statusOf('email=eve@x.com');
        if (!membership(got).weekly_news_) throw new Error('not yet');
        return got;
      });
      expect(membership(s).promo).toBe(false);
    });

    it('keeps the history of every change (who, when, which key) and a list/subscribe event per update', async () => {
      const before = Date.now();
      await subscribe({ list_id: 'promo', email: 'hist@x.com', subscribed: true }, acc.publicKey);
      await subscribe({ list_id: 'promo', email: 'hist@x.com', subscribed: false }, acc.privateKey);
      await subscribe({ opted_in: false, email: 'hist@x.com' }, acc.publicKey);
      await eventually(async () => {
        const got = await statusOf('email=hist@x.com');
        return membership(got).promo === false && !got.opted_in;
      });
      // Scaled out, the read waits for the processor to finish its work, then stops it for the read.
      const { history, events } = await readStore(
        p,
        acc.id,
        async (query) => {
          const rows = await query<Record<string, unknown>>(
            "SELECT list_id, subscribed, identifier_kind, identifier_value, api_key, source, toUnixTimestamp64Milli(changed_at) AS ms FROM {db}.consent_history WHERE identifier_value = 'hist@x.com' ORDER BY version",
          );
          if (rows.length < 3) throw new Error(`${rows.length} rows`);
          const events = await query<{ type: string; action: string; list_id: string; subscribed: boolean }>(
            "SELECT type, action, list_id, subscribed FROM {db}.events WHERE identifiers['email'] = 'hist@x.com' ORDER BY list_id, subscribed",
          );
          return { history: rows, events };
        },
        { timeoutMs: 15_000 },
      );
      expect(
        history.map((r) => [r.list_id, r.subscribed, r.identifier_kind, r.identifier_value, r.source]),
      ).toEqual([
        ['promo', true, 'email', 'hist@x.com', 'subscriptions'],
        ['promo', false, 'email', 'hist@x.com', 'subscriptions'],
        ['svc_all', false, 'email', 'hist@x.com', 'subscriptions'],
      ]);
      expect(history.map((r) => r.api_key)).toEqual([
        'public',
        expect.stringMatching(/^private:k[0-9a-f]+$/),
        'public',
      ]);
      for (const r of history) {
        expect(Number(r.ms)).toBeGreaterThanOrEqual(before - 1000);
        expect(Number(r.ms)).toBeLessThanOrEqual(Date.now());
      }
      expect(events).toEqual([
        { type: 'list', action: 'subscribe', list_id: 'promo', subscribed: false },
        { type: 'list', action: 'subscribe', list_id: 'promo', subscribed: true },
        { type: 'list', action: 'subscribe', list_id: 'svc_all', subscribed: false },
      ]);
    });

    it('rebuilds the hot consent state from the store', async () => {
      const before = await statusOf('email=bob@x.com');
      expect(before.opted_in).toBe(false);
      expect(membership(before).weekly_news_).toBe(true);
      p = await loseDerivedState(p);
      if (p instanceof ScaledPlatform) {
        // Redis lost: the next batch of the account makes the processor rebuild it from the store.
        expect(membership(await statusOf('email=bob@x.com')).weekly_news_).toBe(false);
        await postWithKey(p, acc.publicKey, '/v3/events', {
          type: 'pageview',
          identifiers: { email: 'wake@x.com' },
        });
      }
      const after = await eventually(async () => {
        const got = await statusOf('email=bob@x.com');
        if (!membership(got).weekly_news_) throw new Error('not rebuilt yet');
        return got;
      }, 30_000);
      expect(after).toEqual(before);
    });
  });
});
