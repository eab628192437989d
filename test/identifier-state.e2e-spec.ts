import { ADMIN_TOKEN, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { StoreChecks } from './support/store-checks.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { postWithKey } from './support/api-calls.js';
import { expectInvalids } from './support/answers.js';

/**
 * The original API's per-identifier surface on both wirings (issue 20): consent (`/v3/consent`, one
 * truth with `opted_in` and `svc_all` for email), reachability, identifier metadata, and schema modules
 * gating custom objects.
 */
describe.each(WIRINGS)('consent, reachability, identifier metadata and schema modules (%s)', (_w, start) => {
  let p: Platform;
  let acc: TestAccount;
  let store: StoreChecks;

  beforeAll(async () => {
    ({ p, acc } = await startWithAccount(start, 'surface'));
    store = new StoreChecks(() => ({ platform: p, account: acc.id }));
    const field = (name: string, type: string) =>
      postWithKey(p, acc.privateKey, '/v3/schema/objects/customers/fields', {
        name,
        type,
        display_name: name,
      });
    expect((await field('tier', 'string')).status).toBe(201);
    expect((await field('score', 'number')).status).toBe(201);
  }, 60_000);
  afterAll(() => p.close(), 30_000);

  const post = (path: string, body: unknown, key = acc.publicKey) => postWithKey(p, key, path, body);
  const get = (path: string, key = acc.privateKey) => p.http().get(path).set('x-api-key', key);
  const consentOf = async (field: string, id: string) => {
    const res = await get(`/v3/consent/${field}?id=${encodeURIComponent(id)}`);
    expect(res.status).toBe(200);
    return res.body as {
      consent: boolean | null;
      consent_update_reason: string | null;
      consent_update_ts: number | null;
    };
  };
  const optedIn = async (email: string) => {
    const res = await get(`/v3/lists/subscriptions?email=${encodeURIComponent(email)}`);
    const svcAll = (res.body.subscriptions as { list_id: string; subscribed: boolean }[]).find(
      (s) => s.list_id === 'svc_all',
    );
    return { opted_in: res.body.opted_in as boolean, svc_all: svcAll?.subscribed };
  };

  describe('consent', () => {
    it('for email is the channel opt-in: /v3/consent, opted_in and svc_all read the same, whichever way it was set', async () => {
      const email = 'Ann@Example.com';
      expect((await consentOf('email', email)).consent).toBeNull();
      const res = await post('/v3/consent', [
        {
          identifier_field_name: 'email',
          identifier_value: email,
          consent: true,
          consent_update_reason: 'signup form',
          consent_update_ts: 1_700_000_000,
        },
      ]);
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ title: 'Accepted', status: 202, timestamp: expect.any(String) });
      const read = await eventually(async () => {
        const c = await consentOf('email', 'ann@example.com');
        if (c.consent !== true) throw new Error('not yet');
        return c;
      });
      expect(read).toEqual({
        identifier_field_name: 'email',
        identifier_value: 'ann@example.com',
        consent: true,
        consent_update_reason: 'signup form',
        consent_update_ts: 1_700_000_000,
      });
      expect(await optedIn(email)).toEqual({ opted_in: true, svc_all: true });
      expect((await get(`/v3/profiles?email=${email}`)).body.attributes.opted_in).toBe(true);

      // Opted out through the lists API: /v3/consent says so (the reason it had no longer applies).
      expect((await post('/v3/lists/subscriptions', { opted_in: false, email })).status).toBe(200);
      await eventually(async () => (await consentOf('email', email)).consent === false);
      expect(await consentOf('email', email)).toMatchObject({
        consent: false,
        consent_update_reason: null,
        consent_update_ts: null,
      });
      // Opted in again through a profile update: the same truth everywhere.
      expect((await post('/v3/profiles', { attributes: { email, opted_in: true } })).status).toBe(202);
      await eventually(async () => (await consentOf('email', email)).consent === true);
      expect(await optedIn(email)).toEqual({ opted_in: true, svc_all: true });

      // And out through /v3/consent: the profile and svc_all follow.
      await post('/v3/consent', { identifier_field_name: 'email', identifier_value: email, consent: false });
      await eventually(async () => (await optedIn(email)).opted_in === false);
      expect(await optedIn(email)).toEqual({ opted_in: false, svc_all: false });
      expect((await consentOf('email', email)).consent).toBe(false);
    });

    it('of a push token is the token’s own; a consent event and a consent-history row per change', async () => {
      const token = 'tok-surface-1';
      expect(
        (
          await post('/v3/consent', [
            {
              identifier_field_name: 'ios_push_tokens',
              identifier_value: token,
              consent: false,
              consent_update_reason: 'user said no',
              consent_update_ts: '2024-05-01T10:00:00Z',
              event_data: { campaign: 'spring' },
            },
          ])
        ).status,
      ).toBe(202);
      const read = await eventually(async () => {
        const c = await consentOf('ios_push_tokens', token);
        if (c.consent === null) throw new Error('not yet');
        return c;
      });
      expect(read).toEqual({
        identifier_field_name: 'ios_push_tokens',
        identifier_value: token,
        consent: false,
        consent_update_reason: 'user said no',
        consent_update_ts: Date.parse('2024-05-01T10:00:00Z') / 1000,
      });
      await store.check(async (query) => {
        const events = await query<{ type: string; action: string; token: string; ts: number }>(
          "SELECT type, action, identifiers['ios_push_tokens'] AS token, toUnixTimestamp(ts) AS ts FROM {db}.events WHERE type = 'consent' AND identifiers['ios_push_tokens'] = 'tok-surface-1'",
        );
        expect(events).toEqual([
          { type: 'consent', action: 'opt-out', token, ts: Date.parse('2024-05-01T10:00:00Z') / 1000 },
        ]);
        const history = await query<Record<string, unknown>>(
          "SELECT list_id, subscribed, identifier_kind, identifier_value, api_key, source FROM {db}.consent_history WHERE identifier_value IN ('tok-surface-1', 'ann@example.com') ORDER BY identifier_value, changed_at, version",
        );
        expect(history.filter((h) => h.identifier_value === token)).toEqual([
          {
            list_id: 'ios_push_tokens',
            subscribed: false,
            identifier_kind: 'ios_push_tokens',
            identifier_value: token,
            api_key: 'public',
            source: 'identifier_consent',
          },
        ]);
        // The email changes made through /v3/consent are svc_all changes, beside the lists API's.
        expect(
          history
            .filter((h) => h.identifier_value === 'ann@example.com' && h.source === 'consent')
            .map((h) => [h.list_id, h.subscribed]),
        ).toEqual([
          ['svc_all', true],
          ['svc_all', false],
        ]);
        const emailEvents = await query<{ action: string }>(
          "SELECT action FROM {db}.events WHERE type = 'consent' AND identifiers['email'] = 'ann@example.com' ORDER BY ts",
        );
        expect(emailEvents.map((e) => e.action)).toEqual(['opt-in', 'opt-out']);
      });
    });

    it('of a phone is the phone’s own, kept exactly as sent; the customers with that phone get the event', async () => {
      expect(
        (await post('/v3/profiles', { attributes: { email: 'phoned@x.com', phone: '+47 555 0100' } })).status,
      ).toBe(202);
      await eventually(async () => (await get('/v3/profiles?email=phoned@x.com')).status === 200);
      const res = await post('/v3/consent', {
        identifier_field_name: 'phone',
        identifier_value: '+47 555 0100',
        consent: true,
      });
      expect(res.status).toBe(202);
      await eventually(async () => (await consentOf('phone', '+47 555 0100')).consent === true);
      expect((await consentOf('phone', '+4755501 00')).consent).toBeNull();
      // A phone's consent is not the email channel's.
      expect((await optedIn('phoned@x.com')).opted_in).toBe(false);
      await store.check(async (query) => {
        const events = await query<{ email: string | null }>(
          "SELECT c.email AS email FROM {db}.events AS e INNER JOIN (SELECT svc_id, email FROM {db}.customers FINAL) AS c ON c.svc_id = e.svc_id WHERE e.type = 'consent' AND e.identifiers['phone'] = '+47 555 0100'",
        );
        expect(events).toEqual([{ email: 'phoned@x.com' }]);
      });
    });

    it('answers null for an identifier nobody sent, and refuses bad requests before the 202', async () => {
      expect(await consentOf('android_push_tokens', 'never-seen')).toEqual({
        identifier_field_name: 'android_push_tokens',
        identifier_value: 'never-seen',
        consent: null,
        consent_update_reason: null,
        consent_update_ts: null,
      });
      const bad = await post('/v3/consent', [
        { identifier_field_name: 'email', identifier_value: 'ok@x.com', consent: true },
        { identifier_field_name: 'customer_id', identifier_value: 'c1', consent: true },
        { identifier_field_name: 'email', identifier_value: 'not-an-email', consent: true },
        { identifier_field_name: 'email', identifier_value: 'b@x.com' },
        {
          identifier_field_name: 'email',
          identifier_value: 'c@x.com',
          consent: true,
          consent_update_ts: 'soon',
        },
        {
          identifier_field_name: 'email',
          identifier_value: 'd@x.com',
          consent: true,
          event_data: { ts: 'x' },
        },
      ]);
      expect(bad.status).toBe(400);
      expect(bad.body.detail.invalids).toEqual([
        {
          event: 1,
          field: 'identifier_field_name',
          reason: 'must be a messaging identifier: email, phone or a *_push_tokens field',
          message:
            'record 1: identifier_field_name must be a messaging identifier: email, phone or a *_push_tokens field',
        },
        { event: 2, field: 'identifier_value', reason: expect.any(String), message: expect.any(String) },
        { event: 3, field: 'consent', reason: 'is required', message: 'record 3: consent is required' },
        { event: 4, field: 'consent_update_ts', reason: expect.any(String), message: expect.any(String) },
        { event: 5, field: 'event_data.ts', reason: expect.any(String), message: expect.any(String) },
      ]);
      // Nothing of the refused request was stored: its first, valid record never shows.
      expect((await consentOf('email', 'ok@x.com')).consent).toBeNull();
      const tooMany = Array.from({ length: 1001 }, (_, i) => ({
        identifier_field_name: 'email',
        identifier_value: `n${i}@x.com`,
        consent: true,
      }));
      const over = await post('/v3/consent', tooMany);
      expect(over.status).toBe(400);
      expect(over.body.detail.invalids[0]).toMatchObject({
        field: 'body',
        reason: expect.stringContaining('1000'),
      });
      expect((await post('/v3/consent', [])).status).toBe(400);

      const notAnIdentifier = await get('/v3/consent/customer_id?id=123');
      expect(notAnIdentifier.status).toBe(400);
      expect(notAnIdentifier.body.detail.invalids).toEqual([
        { field: 'identifier_field_name', reason: expect.stringContaining('messaging identifier') },
      ]);
      const noId = await get('/v3/consent/email');
      expect(noId.status).toBe(400);
      expect(noId.body.detail.invalids[0].field).toBe('id');
      expect((await get('/v3/consent/email?id=a@x.com', acc.publicKey)).status).toBe(403);
    });

    it('reports dropped event_data fields, and a resend with the same Idempotency-Key is answered again, stored once', async () => {
      const body = {
        identifier_field_name: 'email',
        identifier_value: 'idem@x.com',
        consent: true,
        event_data: { mood: 'happy' },
      };
      const send = () =>
        p
          .http()
          .post('/v3/consent')
          .set('x-api-key', acc.publicKey)
          .set('Idempotency-Key', 'consent-1')
          .send(body);
      const first = await send();
      expect(first.status).toBe(202);
      expect(first.body.dropped).toEqual([{ event: 0, fields: ['mood'] }]);
      const again = await send();
      expect(again.status).toBe(202);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers['z-request-id']).toBe(first.headers['z-request-id']);
      await eventually(async () => (await consentOf('email', 'idem@x.com')).consent === true);
      await store.check(async (query) => {
        const rows = await query<{ n: string }>(
          "SELECT count() AS n FROM {db}.identifier_updates WHERE value = 'idem@x.com'",
        );
        expect(Number(rows[0]!.n)).toBe(1);
      });
    });
  });

  describe('reachability', () => {
    const reachabilityOf = async (field: string, id: string) => {
      const res = await get(`/v3/reachability/${field}?id=${encodeURIComponent(id)}`);
      expect(res.status).toBe(200);
      return res.body as Record<string, unknown>;
    };

    it('keeps the latest change per identifier; an update type only when unreachable', async () => {
      expect(await reachabilityOf('email', 'bounce@x.com')).toEqual({
        identifier_field_name: 'email',
        identifier_value: 'bounce@x.com',
        reachable: null,
        reachable_update_type: null,
        reachable_update_reason: null,
        reachable_update_ts: null,
      });
      const down = await post('/v3/reachability', [
        {
          identifier_field_name: 'email',
          identifier_value: 'bounce@x.com',
          reachable: false,
          reachable_update_type: 'hard_bounce',
          reachable_update_reason: '550 no such user',
          reachable_update_ts: 1_710_000_000,
        },
      ]);
      expect(down.status).toBe(202);
      await eventually(async () => (await reachabilityOf('email', 'bounce@x.com')).reachable === false);
      expect(await reachabilityOf('email', 'bounce@x.com')).toEqual({
        identifier_field_name: 'email',
        identifier_value: 'bounce@x.com',
        reachable: false,
        reachable_update_type: 'hard_bounce',
        reachable_update_reason: '550 no such user',
        reachable_update_ts: 1_710_000_000,
      });
      await post('/v3/reachability', {
        identifier_field_name: 'email',
        identifier_value: 'bounce@x.com',
        reachable: true,
      });
      await eventually(async () => (await reachabilityOf('email', 'bounce@x.com')).reachable === true);
      expect(await reachabilityOf('email', 'bounce@x.com')).toMatchObject({
        reachable: true,
        reachable_update_type: null,
        reachable_update_reason: null,
      });
      // Reachability is not consent: the address was never opted in or out.
      expect((await consentOf('email', 'bounce@x.com')).consent).toBeNull();
      await store.check(async (query) => {
        const events = await query<{ action: string }>(
          "SELECT action FROM {db}.events WHERE type = 'reachability' AND identifiers['email'] = 'bounce@x.com' ORDER BY ts",
        );
        expect(events.map((e) => e.action)).toEqual(['unreachable', 'reachable']);
      });
    });

    it('refuses a missing, unknown or superfluous update type', async () => {
      const res = await post('/v3/reachability', [
        { identifier_field_name: 'email', identifier_value: 'a@x.com', reachable: false },
        {
          identifier_field_name: 'email',
          identifier_value: 'a@x.com',
          reachable: true,
          reachable_update_type: 'spam_report',
        },
        {
          identifier_field_name: 'email',
          identifier_value: 'a@x.com',
          reachable: false,
          reachable_update_type: 'gone',
        },
        { identifier_field_name: 'shoe_size', identifier_value: 'a', reachable: true },
      ]);
      expect(res.status).toBe(400);
      expect(res.body.detail.invalids).toEqual([
        {
          event: 0,
          field: 'reachable_update_type',
          reason: 'is required when reachable is false',
          message: 'record 0: reachable_update_type is required when reachable is false',
        },
        {
          event: 1,
          field: 'reachable_update_type',
          reason: 'must be null when reachable is true',
          message: expect.any(String),
        },
        { event: 2, field: 'reachable_update_type', reason: expect.any(String), message: expect.any(String) },
        { event: 3, field: 'identifier_field_name', reason: expect.any(String), message: expect.any(String) },
      ]);
    });
  });

  describe('identifier metadata', () => {
    const metadataOf = async (field: string, id: string) => {
      const res = await get(`/v3/identifiers/${field}?id=${encodeURIComponent(id)}`);
      expect(res.status).toBe(200);
      return res.body as { metadata: Record<string, unknown>; metadata_update_ts: number | null };
    };

    it('sets fields that exist, clears them with null, and keeps the time of the last change', async () => {
      expect(await metadataOf('customer_id', 'meta-1')).toEqual({
        identifier_field_name: 'customer_id',
        identifier_value: 'meta-1',
        metadata: {},
        metadata_update_ts: null,
      });
      const before = Math.floor(Date.now() / 1000);
      const res = await post('/v3/identifiers', [
        {
          identifier_field_name: 'customer_id',
          identifier_value: 'meta-1',
          metadata: { tier: 'gold', score: '12.5' },
        },
      ]);
      expect(res.status).toBe(202);
      const set = await eventually(async () => {
        const m = await metadataOf('customer_id', 'meta-1');
        if (!m.metadata_update_ts) throw new Error('not yet');
        return m;
      });
      expect(set.metadata).toEqual({ tier: 'gold', score: 12.5 });
      expect(set.metadata_update_ts).toBeGreaterThanOrEqual(before);
      await post('/v3/identifiers', {
        identifier_field_name: 'customer_id',
        identifier_value: 'meta-1',
        metadata: { tier: null, score: 3 },
      });
      await eventually(async () => (await metadataOf('customer_id', 'meta-1')).metadata.score === 3);
      expect((await metadataOf('customer_id', 'meta-1')).metadata).toEqual({ score: 3 });
    });

    it('refuses fields that do not exist and values not of the field’s type', async () => {
      const res = await post('/v3/identifiers', [
        {
          identifier_field_name: 'customer_id',
          identifier_value: 'meta-2',
          metadata: { nope: 1, score: 'high' },
        },
        { identifier_field_name: 'customer_id', identifier_value: 'meta-2', metadata: {} },
      ]);
      expectInvalids(res, [
        {
          event: 0,
          field: 'metadata.nope',
          reason: expect.stringContaining('schema API'),
        },
        { event: 0, field: 'metadata.score', reason: expect.any(String) },
        { event: 1, field: 'metadata', reason: expect.any(String) },
      ]);
      expect((await get('/v3/identifiers/nothing?id=x')).status).toBe(400);
    });
  });

  describe('schema modules', () => {
    const admin = (method: 'get' | 'patch', body?: object) => {
      const req = p
        .http()
        [method](`/admin/v1/accounts/${acc.id}/modules`)
        .set('authorization', `Bearer ${ADMIN_TOKEN}`);
      return body ? req.send(body) : req;
    };
    const stores = {
      name: 'stores',
      display_name: 'Stores',
      fields: [{ name: 'store_id', type: 'string', display_name: 'Store ID', primary: true }],
    };

    it('lists the enabled modules; enabling one twice is 400 already enabled; unknown ones are refused', async () => {
      expect((await get('/v3/schema/modules')).body).toEqual({ enabled_modules: ['custom_objects'] });
      const twice = await post('/v3/schema/modules', { module: 'custom_objects' }, acc.privateKey);
      expect(twice.status).toBe(400);
      expect(twice.body.detail).toEqual({ invalids: [{ field: 'module', reason: 'already enabled' }] });
      const unknown = await post('/v3/schema/modules', { module: 'teleport' }, acc.privateKey);
      expect(unknown.status).toBe(400);
      expect(unknown.body.detail.invalids[0].field).toBe('module');
      expect((await post('/v3/schema/modules', {}, acc.privateKey)).status).toBe(400);
      expect((await get('/v3/schema/modules', acc.publicKey)).status).toBe(403);
    });

    it('gates custom objects: off, their routes answer 403 until the account enables the module of its package', async () => {
      expect((await post('/v3/schema/objects', stores, acc.privateKey)).status).toBe(201);
      expect((await post('/v3/objects/stores', { store_id: 's1' })).status).toBe(202);

      expect((await admin('patch', { custom_objects: 'available' })).body).toEqual({
        modules: { custom_objects: 'available' },
      });
      expect((await get('/v3/schema/modules')).body).toEqual({ enabled_modules: [] });
      const refused = await post(
        '/v3/schema/objects',
        { ...stores, name: 'shops', display_name: 'Shops' },
        acc.privateKey,
      );
      expect(refused.status).toBe(403);
      expect(refused.body.detail.message).toContain('custom_objects module is not enabled');
      expect((await post('/v3/objects/stores', { store_id: 's2' })).status).toBe(403);
      // Built-in objects are not the module's.
      expect((await post('/v3/objects/customers', { email: 'built-in@x.com' })).status).toBe(202);

      const enabled = await post('/v3/schema/modules', { module: 'custom_objects' }, acc.privateKey);
      expect(enabled.status).toBe(200);
      expect(enabled.body).toEqual({ enabled_modules: ['custom_objects'] });
      expect((await post('/v3/objects/stores', { store_id: 's3' })).status).toBe(202);

      // Out of the package, the account cannot enable it itself.
      await admin('patch', { custom_objects: 'unavailable' });
      const outside = await post('/v3/schema/modules', { module: 'custom_objects' }, acc.privateKey);
      expect(outside.status).toBe(403);
      expect((await admin('patch', { custom_objects: 'maybe' })).status).toBe(400);
      expect((await admin('patch', { warp: 'enabled' })).status).toBe(400);
      await admin('patch', { custom_objects: 'enabled' });
      expect((await admin('get')).body).toEqual({ modules: { custom_objects: 'enabled' } });
    });
  });

  it('passes the store checks kept on the scaled-out wiring', async () => {
    await store.runKept();
  }, 90_000);
});
