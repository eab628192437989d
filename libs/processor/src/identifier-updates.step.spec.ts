import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Delivery } from '@cdp/bus';
import { MemoryConsentState, MemoryIdentifierState } from '@cdp/consent/memory';
import type { IdentifierUpdatesMessage } from '@cdp/contracts';
import type { IdentifierUpdate } from '@cdp/domain';
import { MemoryIdentityIndex, MemoryProfileState } from '@cdp/identity/memory';
import { createLogger } from '@cdp/logger';
import { FileMetadataStore } from '@cdp/metadata/file';
import { ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { IdentityRebuild } from './identity-rebuild.service.js';
import { IdentityStep } from './identity.step.js';
import { IdentifierUpdatesStep } from './identifier-updates.step.js';
import { StepWriter } from './step-writer.js';
import { unwrap } from './store-rows.js';

/** The step on the embedded drivers and chDB: what identifier updates leave behind, and their rebuild. */
describe('IdentifierUpdatesStep', () => {
  let store: ClickHouseStore;
  let identity: MemoryIdentityIndex;
  let profiles: MemoryProfileState;
  let consent: MemoryConsentState;
  let state: MemoryIdentifierState;
  let rebuild: IdentityRebuild;
  let step: {
    process(account: string, deliveries: (Delivery & { message: IdentifierUpdatesMessage })[]): Promise<void>;
  };

  beforeAll(() => {
    store = new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-idupd-'))));
  });
  afterAll(() => store.close());
  beforeEach(() => {
    identity = new MemoryIdentityIndex();
    profiles = new MemoryProfileState();
    consent = new MemoryConsentState();
    state = new MemoryIdentifierState();
    const metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-idupd-meta-')));
    const logger = createLogger('silent');
    rebuild = new IdentityRebuild(identity, profiles, consent, store, metadata, logger, state);
    const identityStep = new IdentityStep(identity, profiles, rebuild);
    const updates = new IdentifierUpdatesStep(identityStep, state, consent, profiles);
    const writer = new StepWriter(store, identityStep);
    // What the runner does with the step's rows (IngestPipeline): write them, bracketed, and settle.
    step = {
      process: async (account, deliveries) =>
        writer.write(account, deliveries, unwrap(await updates.run({ account, deliveries }))),
    };
  });

  const event = (type: string, action: string, identifiers: Record<string, string>) => ({
    type,
    action,
    ts: 1_700_000_000_000,
    channel: 'api',
    identifiers,
    data: {},
  });
  const consentOf = (field: string, value: string, given: boolean): IdentifierUpdate => ({
    type: 'consent',
    field,
    value,
    ts: 1_700_000_000_000,
    consent: given,
    reason: 'test',
    event: event('consent', given ? 'opt-in' : 'opt-out', { [field]: value }),
  });
  const delivery = (
    id: string,
    account: string,
    records: IdentifierUpdate[],
    deliveryCount = 1,
  ): Delivery & { message: IdentifierUpdatesMessage } => ({
    handle: id,
    deliveryCount,
    sequence: 1,
    message: { id, account, kind: 'identifier-updates', receivedAt: Date.now(), key: 'public', records },
  });

  it('makes email consent the opt-in (profile, svc_all) and keeps a push token’s consent its own', async () => {
    await step.process('ia', [
      delivery('m1', 'ia', [consentOf('email', 'a@x.com', true), consentOf('ios_push_tokens', 't1', false)]),
    ]);
    const a = (await identity.lookup('ia', { kind: 'email', value: 'a@x.com' }))!;
    const t = (await identity.lookup('ia', { kind: 'ios_push_tokens', value: 't1' }))!;
    expect((await profiles.get('ia', a))!.attributes).toEqual({ email: 'a@x.com', opted_in: true });
    expect((await consent.get('ia', a))!.lists).toEqual({ svc_all: true });
    expect(await consent.get('ia', t)).toBeUndefined();
    expect((await state.get('ia', 'ios_push_tokens', 't1'))!.consent).toEqual({
      consent: false,
      reason: 'test',
      ts: 1_700_000_000_000,
    });
  });

  it('takes a phone’s changes to the customers whose profile has it, and keeps one nobody has', async () => {
    await profiles.apply('ic', [
      { customerId: 'p1', update: { phone: '+47 555' } },
      { customerId: 'p2', update: { phone: '+47 555' } },
    ]);
    await step.process('ic', [
      delivery('m4', 'ic', [consentOf('phone', '+47 555', false), consentOf('phone', '+1 nobody', true)]),
    ]);
    expect((await state.get('ic', 'phone', '+47 555'))!.consent!.consent).toBe(false);
    expect((await state.get('ic', 'phone', '+1 nobody'))!.consent!.consent).toBe(true);
    // No customer is made of a phone: resolution does not know it.
    expect(await identity.lookup('ic', { kind: 'phone', value: '+1 nobody' })).toBeUndefined();
    const history = await store.query<{ svc_id: string; identifier_value: string }>(
      'ic',
      'SELECT svc_id, identifier_value FROM {db}.consent_history ORDER BY identifier_value, svc_id',
    );
    expect(history).toEqual([
      { svc_id: '', identifier_value: '+1 nobody' },
      { svc_id: 'p1', identifier_value: '+47 555' },
      { svc_id: 'p2', identifier_value: '+47 555' },
    ]);
    const events = await store.query<{ event_id: string; svc_id: string; action: string }>(
      'ic',
      "SELECT event_id, svc_id, action FROM {db}.events WHERE type = 'consent' ORDER BY event_id",
    );
    expect(events).toEqual([
      { event_id: 'm4-0', svc_id: 'p1', action: 'opt-out' },
      { event_id: 'm4-0.1', svc_id: 'p2', action: 'opt-out' },
    ]);
  });

  it('stores a redelivered message once, and the state rebuilt from the store equals the live one', async () => {
    const first = delivery('m2', 'ib', [consentOf('ios_push_tokens', 't2', true)]);
    await step.process('ib', [first]);
    await step.process('ib', [{ ...first, deliveryCount: 2 }]);
    await step.process('ib', [
      delivery('m3', 'ib', [
        consentOf('ios_push_tokens', 't2', false),
        consentOf('email', 'b@x.com', false),
        {
          type: 'reachability',
          field: 'email',
          value: 'b@x.com',
          ts: 1_700_000_001_000,
          reachable: false,
          update_type: 'hard_bounce',
          reason: null,
          event: event('reachability', 'unreachable', { email: 'b@x.com' }),
        },
        {
          type: 'metadata',
          field: 'email',
          value: 'b@x.com',
          ts: 1_700_000_002_000,
          metadata: { tier: 'gold' },
        },
      ]),
    ]);
    const count = async (table: string) =>
      Number((await store.query<{ n: string }>('ib', `SELECT count() AS n FROM {db}.${table}`))[0]!.n);
    expect(await count('identifier_updates')).toBe(5);
    expect(await count('consent_history')).toBe(3);
    expect(await count('events')).toBe(4);
    const live = {
      t2: await state.get('ib', 'ios_push_tokens', 't2'),
      b: await state.get('ib', 'email', 'b@x.com'),
    };
    const b = (await identity.lookup('ib', { kind: 'email', value: 'b@x.com' }))!;
    const t2 = (await identity.lookup('ib', { kind: 'ios_push_tokens', value: 't2' }))!;
    await rebuild.rebuild('ib');
    // Rows carry the version live state gave them: the rebuild ends where the live state is.
    expect(await state.get('ib', 'ios_push_tokens', 't2')).toEqual(live.t2);
    expect(await state.get('ib', 'email', 'b@x.com')).toEqual(live.b);
    // A token's consent is never a list membership, also after a rebuild.
    expect(await consent.get('ib', t2)).toBeUndefined();
    expect((await consent.get('ib', b))!.lists).toEqual({ svc_all: false });
  });
});
