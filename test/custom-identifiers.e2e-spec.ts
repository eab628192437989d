import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import { loseDerivedState, type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { completedExport } from './support/exports.js';
import { postWithKey } from './support/api-calls.js';
import { declareField } from './support/schema-objects.js';

type Attributes = Record<string, unknown>;

/**
 * Custom identifiers (`POST /v3/schema/identifiers`, issue 20): a high-confidence one merges the
 * customers that share it, a low-confidence one finds its customer but never merges two known ones; both
 * work in events, profiles, lookups and exports, and survive a rebuild of the identity index.
 */
describe.each(WIRINGS)('custom identifiers (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;

  beforeAll(async () => ({ p, acc } = await startWithAccount(start, 'custom-ids')), 60_000);
  afterAll(() => p.close(), 30_000);

  const createIdentifier = (body: unknown, key = acc.privateKey) =>
    postWithKey(p, key, '/v3/schema/identifiers', body);
  const events = (body: unknown) => postWithKey(p, acc.publicKey, '/v3/events', body);
  const profiles = (body: unknown) => postWithKey(p, acc.publicKey, '/v3/profiles', body);
  const lookup = (query: string) => p.http().get(`/v3/profiles?${query}`).set('x-api-key', acc.privateKey);
  /** The profile a query finds once `ready` holds for it. */
  const profileWhen = (query: string, ready: (a: Attributes) => boolean) =>
    eventually(async () => {
      const res = await lookup(query);
      if (res.status !== 200 || !ready(res.body.attributes as Attributes))
        throw new Error(`${query}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.attributes as Attributes;
    }, 30_000);

  const field = (name: string, display_name: string) => ({
    name,
    display_name,
    type: 'string',
    auto: false,
    created_by: 'account',
    primary_key: false,
    description: expect.any(String),
  });

  it('creates identifiers: 201 with the field added to events and to customers; lists them', async () => {
    const high = await createIdentifier({
      name: 'loyalty_id',
      display_name: 'Loyalty ID',
      merge_confidence: 'high',
      messaging: false,
    });
    expect(high.status).toBe(201);
    expect(high.body).toEqual({
      events: [field('loyalty_id', 'Loyalty ID')],
      customers: [field('loyalty_id', 'Loyalty ID')],
    });
    const low = await createIdentifier({
      name: 'device_hash',
      display_name: 'Device Hash',
      merge_confidence: 'low',
    });
    expect(low.status).toBe(201);
    const listed = await p.http().get('/v3/schema/identifiers').set('x-api-key', acc.privateKey);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      identifiers: [
        { name: 'loyalty_id', display_name: 'Loyalty ID', merge_confidence: 'high', messaging: false },
        { name: 'device_hash', display_name: 'Device Hash', merge_confidence: 'low', messaging: false },
      ],
    });
    for (const object of ['customers', 'events']) {
      const res = await p
        .http()
        .get(`/v3/schema/objects/${object}/fields/device_hash`)
        .set('x-api-key', acc.privateKey);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(field('device_hash', 'Device Hash'));
    }
  });

  it('refuses bad requests in the envelope: keys, name and display-name suffixes, confidence, duplicates', async () => {
    expect((await createIdentifier({}, acc.publicKey)).status).toBe(403);
    expect((await p.http().post('/v3/schema/identifiers').send({})).status).toBe(401);
    const invalids = async (body: unknown) => {
      const res = await createIdentifier(body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ title: 'Bad Request', status: 400 });
      return res.body.detail.invalids as { field: string; reason: string }[];
    };
    expect((await invalids({})).map((i) => i.field).sort()).toEqual([
      'display_name',
      'merge_confidence',
      'name',
    ]);
    expect(
      await invalids({
        name: 'loyalty',
        display_name: 'Loyalty',
        merge_confidence: 'medium',
        messaging: 'yes',
      }),
    ).toEqual([
      { field: 'name', reason: expect.stringMatching(/^must end with one of _id, _hash/) },
      { field: 'display_name', reason: expect.stringMatching(/^must end with one of " ID"/) },
      { field: 'merge_confidence', reason: 'must be one of low, high' },
      { field: 'messaging', reason: 'must be true or false' },
    ]);
    expect(await invalids({ name: 'Bad-Name_id', display_name: 'Bad ID', merge_confidence: 'low' })).toEqual([
      { field: 'name', reason: expect.stringMatching(/^must be lower snake case/) },
    ]);
    // A duplicate is refused on the customers field, as the original API's clients expect.
    const dup = await invalids({ name: 'loyalty_id', display_name: 'Other ID', merge_confidence: 'low' });
    expect(dup[0]).toEqual({ field: 'customers.name', reason: expect.stringMatching(/^already used/) });
    expect(dup).toContainEqual({ field: 'events.name', reason: expect.stringMatching(/^already used/) });
    const usedDisplay = await invalids({
      name: 'card_number',
      display_name: ' LOYALTY ID',
      merge_confidence: 'low',
    });
    expect(usedDisplay[0]).toEqual({
      field: 'customers.display_name',
      reason: expect.stringMatching(/^already used/),
    });
    // Names of the platform's own fields are taken as well.
    expect(
      (await invalids({ name: 'customer_id', display_name: 'Customer ID', merge_confidence: 'high' }))[0],
    ).toEqual({
      field: 'customers.name',
      reason: expect.stringMatching(/^already used/),
    });
    const listed = await p.http().get('/v3/schema/identifiers').set('x-api-key', acc.privateKey);
    expect(listed.body.identifiers).toHaveLength(2);
  });

  it('a high-confidence identifier merges the customers that share it; lookups and events use it', async () => {
    expect((await profiles({ attributes: { email: 'ann@x.com', first_name: 'Ann' } })).status).toBe(202);
    expect((await profiles({ attributes: { loyalty_id: 'L-1', last_name: 'Lee' } })).status).toBe(202);
    await profileWhen('email=ann@x.com', (a) => a.first_name === 'Ann');
    // The profile holds the identifier as its customer field, and a lookup finds it by it.
    await profileWhen('loyalty_id=L-1', (a) => a.last_name === 'Lee' && a.loyalty_id === 'L-1');
    expect(
      (
        await events({
          type: 'pageview',
          identifiers: { email: 'ann@x.com', loyalty_id: 'L-1' },
          data: { page: '/' },
        })
      ).status,
    ).toBe(202);
    const merged = await profileWhen('loyalty_id=L-1', (a) => a.first_name === 'Ann');
    expect(merged).toMatchObject({
      email: 'ann@x.com',
      first_name: 'Ann',
      last_name: 'Lee',
      loyalty_id: 'L-1',
    });
    expect(await profileWhen('email=ann@x.com', () => true)).toEqual(merged);
    // An identifier an event links is the profile's field value, as email is.
    await events({ type: 'pageview', identifiers: { email: 'dee@x.com', loyalty_id: ' L-2 ' } });
    expect(await profileWhen('loyalty_id=L-2', () => true)).toEqual({
      email: 'dee@x.com',
      loyalty_id: 'L-2',
    });
    // An identifier the account has not created is no identifier: the lookup names the ones it takes.
    const none = await lookup('member_id=L-1');
    expect(none.status).toBe(400);
    expect(none.body.detail.invalids[0].field).toEqual(expect.arrayContaining(['loyalty_id', 'device_hash']));
    expect((await events({ type: 'pageview', identifiers: { member_id: 'x' } })).status).toBe(400);
  });

  it('a low-confidence identifier finds its customer but never merges two known ones', async () => {
    await profiles([
      { attributes: { email: 'bob@x.com', first_name: 'Bob', device_hash: 'D-1' } },
      { attributes: { email: 'cat@x.com', first_name: 'Cat' } },
    ]);
    await profileWhen('device_hash=D-1', (a) => a.first_name === 'Bob');
    // Cat's email is known: the shared device leaves Bob alone. The marker in the same request is
    // processed with it, so once the marker is readable the event has been resolved.
    await events([
      { type: 'pageview', identifiers: { email: 'cat@x.com', device_hash: 'D-1' } },
      { type: 'pageview', identifiers: { email: 'low-marker@x.com' } },
    ]);
    await profileWhen('email=low-marker@x.com', () => true);
    expect((await lookup('email=cat@x.com')).body.attributes).toEqual({
      email: 'cat@x.com',
      first_name: 'Cat',
      name: 'Cat',
    });
    expect((await lookup('device_hash=D-1')).body.attributes).toMatchObject({ first_name: 'Bob' });
    // A record known by the device alone is Bob's, and what else it carries joins him.
    await events({ type: 'pageview', identifiers: { vuid: 'v-new', device_hash: 'D-1' } });
    await profileWhen('vuid=v-new', (a) => a.first_name === 'Bob');
  });

  it('exports carry the identifiers: the customer field and the event field', async () => {
    const exported = await completedExport(p, acc.privateKey, {
      select: {
        object: 'events',
        fields: ['loyalty_id', 'customer.email', 'customer.loyalty_id'],
        filter: { field: 'loyalty_id', operator: '=', value: 'L-1' },
      },
    });
    const rows = parse<Record<string, string>>(readFileSync(exported.fileOf(exported.manifest().files[0]!)), {
      columns: true,
    });
    expect(rows).toEqual([
      { loyalty_id: 'L-1', 'customer.email': 'ann@x.com', 'customer.loyalty_id': 'L-1' },
    ]);
  });

  it('per-identifier state: reachability and metadata of any custom identifier, consent of a messaging one', async () => {
    const send = (path: string, body: unknown) => postWithKey(p, acc.privateKey, path, body);
    const read = (path: string) => p.http().get(path).set('x-api-key', acc.privateKey);
    expect(
      (
        await createIdentifier({
          name: 'pager_number',
          display_name: 'Pager Number',
          merge_confidence: 'low',
          messaging: true,
        })
      ).status,
    ).toBe(201);
    await declareField(p, acc.privateKey, 'customers', {
      name: 'tier',
      type: 'string',
      display_name: 'Tier',
    });
    const consent = await send('/v3/consent', [
      {
        identifier_field_name: 'pager_number',
        identifier_value: 'P-1',
        consent: false,
        consent_update_reason: 'asked',
      },
    ]);
    expect(consent.status).toBe(202);
    const reachability = await send('/v3/reachability', [
      {
        identifier_field_name: 'loyalty_id',
        identifier_value: 'L-1',
        reachable: false,
        reachable_update_type: 'other',
      },
    ]);
    expect(reachability.status).toBe(202);
    const metadata = await send('/v3/identifiers', [
      { identifier_field_name: 'loyalty_id', identifier_value: 'L-1', metadata: { tier: 'gold' } },
    ]);
    expect(metadata.status).toBe(202);
    // Consent is for messaging identifiers: a custom one created without `messaging` is refused, before the 202.
    const refused = await send('/v3/consent', [
      { identifier_field_name: 'loyalty_id', identifier_value: 'L-1', consent: true },
    ]);
    expect(refused.status).toBe(400);
    expect(refused.body.detail.invalids).toEqual([
      expect.objectContaining({
        field: 'identifier_field_name',
        reason: expect.stringContaining('messaging identifier'),
      }),
    ]);
    expect((await read('/v3/consent/loyalty_id?id=L-1')).status).toBe(400);
    // An identifier the account has not created is none.
    expect((await read('/v3/reachability/member_id?id=L-1')).status).toBe(400);
    expect(
      (
        await send('/v3/reachability', [
          { identifier_field_name: 'member_id', identifier_value: 'x', reachable: true },
        ])
      ).status,
    ).toBe(400);
    const answer = (path: string, ready: (body: Record<string, unknown>) => boolean) =>
      eventually(async () => {
        const res = await read(path);
        if (res.status !== 200 || !ready(res.body))
          throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
        return res.body as Record<string, unknown>;
      }, 30_000);
    expect(await answer('/v3/consent/pager_number?id=P-1', (b) => b.consent === false)).toMatchObject({
      identifier_field_name: 'pager_number',
      identifier_value: 'P-1',
      consent: false,
      consent_update_reason: 'asked',
    });
    expect(await answer('/v3/reachability/loyalty_id?id=L-1', (b) => b.reachable === false)).toMatchObject({
      identifier_field_name: 'loyalty_id',
      reachable: false,
      reachable_update_type: 'other',
    });
    expect(
      await answer('/v3/identifiers/loyalty_id?id=L-1', (b) => b.metadata_update_ts !== null),
    ).toMatchObject({
      identifier_field_name: 'loyalty_id',
      metadata: { tier: 'gold' },
    });
  });

  it('keeps working after the identity index is rebuilt from the store', async () => {
    // Scaled out, what was sent is processed first: only the rebuild from the store can bring it back.
    if (p instanceof ScaledPlatform)
      await eventually(async () => (await (p as ScaledPlatform).pending()) === 0, 30_000);
    p = await loseDerivedState(p);
    // Redis lost: the next batch of the account makes the processor rebuild it from the store.
    if (p instanceof ScaledPlatform) await events({ type: 'pageview', identifiers: { email: 'wake@x.com' } });
    expect(await profileWhen('loyalty_id=L-1', () => true)).toMatchObject({
      first_name: 'Ann',
      last_name: 'Lee',
    });
    expect(await profileWhen('device_hash=D-1', () => true)).toMatchObject({ first_name: 'Bob' });
    // Still no merge by the low-confidence identifier, and still a merge by the high one.
    await events([
      { type: 'pageview', identifiers: { email: 'cat@x.com', device_hash: 'D-1' } },
      { type: 'pageview', identifiers: { loyalty_id: 'L-1', vuid: 'v-ann' } },
      { type: 'pageview', identifiers: { email: 'rebuilt-marker@x.com' } },
    ]);
    await profileWhen('email=rebuilt-marker@x.com', () => true);
    expect((await lookup('email=cat@x.com')).body.attributes).toEqual({
      email: 'cat@x.com',
      first_name: 'Cat',
      name: 'Cat',
    });
    expect((await lookup('vuid=v-ann')).body.attributes).toMatchObject({ first_name: 'Ann' });
  });
});
