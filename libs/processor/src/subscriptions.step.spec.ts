import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Delivery } from '@cdp/bus';
import { MemoryConsentState, MemoryIdentifierState } from '@cdp/consent/memory';
import type { SubscriptionsMessage } from '@cdp/contracts';
import type { SubscriptionRecord } from '@cdp/domain';
import { MemoryIdentityIndex, MemoryProfileState } from '@cdp/identity/memory';
import { createLogger } from '@cdp/logger';
import { FileMetadataStore } from '@cdp/metadata/file';
import { IdentityStep } from './identity.step.js';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClickHouseStore } from '@cdp/store';
import { IdentityRebuild } from './identity-rebuild.service.js';
import { isSubscriptionsDelivery, runsOfKind, SubscriptionsStep } from './subscriptions.step.js';
import { StepWriter } from './step-writer.js';
import { okValue } from './testing/processor-harness.js';

/** The step on the embedded drivers and chDB: what a batch of consent changes leaves behind. */
describe('SubscriptionsStep', () => {
  let store: ClickHouseStore;
  let identity: MemoryIdentityIndex;
  let profiles: MemoryProfileState;
  let consent: MemoryConsentState;
  let step: SubscriptionsStep;
  let writer: StepWriter;
  let rebuild: IdentityRebuild;
  /** The step's rows, written as the pipeline writes them. */
  const process = async (account: string, deliveries: (Delivery & { message: SubscriptionsMessage })[]) =>
    writer.write(account, deliveries, okValue(await step.run({ account, deliveries })));

  beforeAll(() => {
    store = new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-subs-'))));
  });
  afterAll(() => store.close());
  beforeEach(() => {
    identity = new MemoryIdentityIndex();
    profiles = new MemoryProfileState();
    consent = new MemoryConsentState();
    rebuild = new IdentityRebuild(
      identity,
      profiles,
      consent,
      store,
      new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-subs-meta-'))),
      createLogger('silent'),
      new MemoryIdentifierState(),
    );
    const identityStep = new IdentityStep(identity, profiles, rebuild);
    step = new SubscriptionsStep(identityStep, consent);
    writer = new StepWriter(store, identityStep);
  });

  const change = (email: string, list: string, subscribed: boolean): SubscriptionRecord => ({
    identifiers: { email },
    list_id: list,
    subscribed,
    channel_opt_in: list === 'svc_all',
  });
  const delivery = (
    id: string,
    account: string,
    records: SubscriptionRecord[],
    deliveryCount = 1,
  ): Delivery & { message: SubscriptionsMessage } => ({
    handle: id,
    deliveryCount,
    sequence: 1,
    message: { id, account, kind: 'subscriptions', receivedAt: Date.now(), key: 'private:k1', records },
  });

  it('changes memberships, opted_in on the profile, and stores history, events and the new customer', async () => {
    await process('sa', [
      delivery('m1', 'sa', [change('a@x.com', 'news', true), change('a@x.com', 'svc_all', false)]),
    ]);
    const customerId = (await identity.lookup('sa', { kind: 'email', value: 'a@x.com' }))!;
    expect(customerId).toBeDefined();
    expect((await consent.get('sa', customerId))!.lists).toEqual({ news: true, svc_all: false });
    expect((await profiles.get('sa', customerId))!.attributes).toEqual({ email: 'a@x.com', opted_in: false });
    const history = await store.query<Record<string, unknown>>(
      'sa',
      'SELECT svc_id, list_id, subscribed, version, api_key FROM {db}.consent_history ORDER BY version',
    );
    expect(history).toEqual([
      { svc_id: customerId, list_id: 'news', subscribed: true, version: 1, api_key: 'private:k1' },
      { svc_id: customerId, list_id: 'svc_all', subscribed: false, version: 2, api_key: 'private:k1' },
    ]);
    const events = await store.query<Record<string, unknown>>(
      'sa',
      'SELECT event_id, type, action, list_id, subscribed FROM {db}.events ORDER BY event_id',
    );
    expect(events).toEqual([
      { event_id: 'm1-0', type: 'list', action: 'subscribe', list_id: 'news', subscribed: true },
      { event_id: 'm1-1', type: 'list', action: 'subscribe', list_id: 'svc_all', subscribed: false },
    ]);
    const customers = [];
    for await (const c of store.currentProfiles('sa')) customers.push(c);
    expect(customers).toEqual([
      {
        svc_id: customerId,
        version: 2,
        attributes: { email: 'a@x.com', opted_in: false },
        // Each field's place in acceptance order (message sequence × 1000 + record index) comes back too.
        times: { email: 1000, opted_in: 1001 },
      },
    ]);
  });

  it('writes the event fields sent with an update (a page subscribing) to its event; offline without them', async () => {
    const fromPage: SubscriptionRecord = {
      ...change('p@x.com', 'news', true),
      event_data: { channel: 'web', page: '/lamps', source: 'ads', landing: true, days_since_last_visit: 2 },
    };
    await process('sp', [delivery('m9', 'sp', [fromPage, change('p@x.com', 'promo', true)])]);
    const events = await store.query<Record<string, unknown>>(
      'sp',
      'SELECT list_id, channel, page, source, landing, days_since_last_visit FROM {db}.events ORDER BY event_id',
    );
    expect(events).toEqual([
      {
        list_id: 'news',
        channel: 'web',
        page: '/lamps',
        source: 'ads',
        landing: true,
        days_since_last_visit: 2,
      },
      {
        list_id: 'promo',
        channel: 'offline',
        page: null,
        source: null,
        landing: null,
        days_since_last_visit: null,
      },
    ]);
  });

  it('stores a redelivered message once, and the hot state rebuilt from the store equals the live one', async () => {
    const first = delivery('m2', 'sb', [change('b@x.com', 'news', true)]);
    await process('sb', [first]);
    await process('sb', [{ ...first, deliveryCount: 2 }]);
    await process('sb', [
      delivery('m3', 'sb', [change('b@x.com', 'promo', true), change('b@x.com', 'news', false)]),
    ]);
    expect(
      Number((await store.query<{ n: string }>('sb', 'SELECT count() AS n FROM {db}.consent_history'))[0]!.n),
    ).toBe(3);
    const customerId = (await identity.lookup('sb', { kind: 'email', value: 'b@x.com' }))!;
    const live = await consent.get('sb', customerId);
    await rebuild.rebuild('sb');
    expect((await consent.get('sb', customerId))!.lists).toEqual(live!.lists);
    expect(live!.lists).toEqual({ news: false, promo: true });
  });
});

describe('runsOfKind', () => {
  it('splits a batch where it changes between consent changes and other records, keeping order', () => {
    const d = (kind: string, id: string) =>
      ({ handle: id, deliveryCount: 1, message: { kind, id } }) as unknown as Delivery;
    const batch = [
      d('events', '1'),
      d('profiles', '2'),
      d('subscriptions', '3'),
      d('subscriptions', '4'),
      d('events', '5'),
    ];
    const runs = runsOfKind(batch);
    expect(runs.map((r) => r.map((x) => x.message.id))).toEqual([['1', '2'], ['3', '4'], ['5']]);
    expect(runs.map((r) => r.every(isSubscriptionsDelivery))).toEqual([false, true, false]);
  });
});
