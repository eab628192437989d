import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Delivery } from '@cdp/bus';
import { MemoryConsentState, MemoryIdentifierState } from '@cdp/consent/memory';
import type { OptOutMessage, OptOutRecord } from '@cdp/contracts';
import { MemoryIdentityIndex, MemoryProfileState } from '@cdp/identity/memory';
import { createLogger } from '@cdp/logger';
import { FileMetadataStore } from '@cdp/metadata/file';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClickHouseStore } from '@cdp/store';
import { IdentityRebuild } from './identity-rebuild.service.js';
import { IdentityStep } from './identity.step.js';
import { isOptOutDelivery, OptOutStep } from './optout.step.js';
import { runsOfKind } from './subscriptions.step.js';
import { StepWriter } from './step-writer.js';
import { emptyBatch } from './store-rows.js';
import { okValue } from './testing/processor-harness.js';

/** The step on the embedded drivers and chDB: what an opt-out leaves in the hot state and the store. */
describe('OptOutStep', () => {
  let store: ClickHouseStore;
  let identity: MemoryIdentityIndex;
  let profiles: MemoryProfileState;
  let identityStep: IdentityStep;
  let rebuild: IdentityRebuild;
  let step: OptOutStep;
  let writer: StepWriter;
  let n = 0;
  /** The step's rows and redactions, written as the pipeline writes them. */
  const process = async (account: string, delivery: Delivery & { message: OptOutMessage }) => {
    const { rows, redact } = okValue(await step.run({ account, delivery }));
    await writer.write(account, [delivery], rows, { redact });
  };

  beforeAll(() => {
    store = new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-optout-'))));
  });
  afterAll(() => store.close());
  beforeEach(() => {
    identity = new MemoryIdentityIndex();
    profiles = new MemoryProfileState();
    rebuild = new IdentityRebuild(
      identity,
      profiles,
      new MemoryConsentState(),
      store,
      new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-optout-meta-'))),
      createLogger('silent'),
      new MemoryIdentifierState(),
    );
    identityStep = new IdentityStep(identity, profiles, rebuild);
    step = new OptOutStep(identity, profiles, identityStep);
    writer = new StepWriter(store, identityStep);
  });

  const email = (value: string) => ({ kind: 'email', value });
  const vuid = (value: string) => ({ kind: 'vuid', value });
  /** A customer as the ingest pipeline leaves it: resolved, its profile applied and stored. */
  async function customer(account: string, ids: Record<string, string>, attributes: Record<string, string>) {
    const message = { id: `seed-${++n}`, receivedAt: Date.now() };
    const item = { message, index: 0, at: n * 1000, record: { identifiers: ids } };
    const {
      resolutions: [r],
    } = okValue(await identityStep.run({ account, items: [item] }));
    const batch = emptyBatch();
    identityStep.addEffectRows(item, r!, '2026-11-22 10:00:00.000', batch);
    batch.customers.push(
      ...(await identityStep.applyProfiles(
        account,
        [{ customerId: r!.customerId, update: attributes, absorb: r!.merged }],
        () => message.id,
        '2026-11-22 10:00:00.000',
      )),
    );
    await store.write(account, batch, false);
    return r!.customerId;
  }
  const delivery = (
    id: string,
    account: string,
    record: OptOutRecord,
    deliveryCount = 1,
  ): Delivery & { message: OptOutMessage } => ({
    handle: id,
    deliveryCount,
    sequence: 1,
    message: { id, account, kind: 'optout', receivedAt: Date.now(), key: 'private:k1', records: [record] },
  });

  it('redacts the customers, pools every identifier, audits once even when redelivered', async () => {
    const a = 'optstep1';
    const ada = await customer(a, { email: 'ada@x.com', vuid: 'av' }, { email: 'ada@x.com', name: 'Ada' });
    const bo = await customer(a, { email: 'bo@x.com' }, { email: 'bo@x.com', name: 'Bo' });
    const d = delivery('req-1', a, {
      requester: 'dpo@x.com',
      sent: [email('ada@x.com')],
      customers: [ada],
      identifiers: [email('ada@x.com'), vuid('av')],
    });
    await process(a, d);
    await process(a, { ...d, deliveryCount: 2 });
    expect(await profiles.get(a, ada)).toMatchObject({ attributes: { opted_in: false }, redacted: true });
    expect((await profiles.get(a, bo))!.attributes).toEqual({ email: 'bo@x.com', name: 'Bo' });
    expect(await profiles.inOptOutPool(a, [email('ada@x.com'), vuid('av'), email('bo@x.com')])).toEqual([
      email('ada@x.com'),
      vuid('av'),
    ]);
    const audit = await store.query<Record<string, unknown>>(
      a,
      'SELECT msg_id, requester, api_key, sent, customers, identifiers FROM {db}.optout_requests',
    );
    expect(audit).toEqual([
      {
        msg_id: 'req-1',
        requester: 'dpo@x.com',
        api_key: 'private:k1',
        sent: ['email:ada@x.com'],
        customers: [ada],
        identifiers: ['email:ada@x.com', 'vuid:av'],
      },
    ]);
    const rows = await store.query<{ email: string | null; name: string | null; redacted: boolean }>(
      a,
      'SELECT email, name, redacted FROM {db}.customers WHERE svc_id = {id:String}',
      { id: ada },
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.every((r) => r.email === null && r.name === null && r.redacted)).toBe(true);
  });

  it('keeps a redacted person opted out when an opt-in accepted before the opt-out is applied after it', async () => {
    const a = 'optstep_order';
    const ada = await customer(a, { email: 'late@x.com' }, { email: 'late@x.com' });
    // The opt-out is message 5 of the bus; an opt-in of message 4 (a redelivery, another processor) comes later.
    const d = {
      ...delivery('req-late', a, {
        requester: 'dpo@x.com',
        sent: [email('late@x.com')],
        customers: [ada],
        identifiers: [email('late@x.com')],
      }),
      sequence: 5,
    };
    await process(a, d);
    await identityStep.applyProfiles(
      a,
      [{ customerId: ada, update: { opted_in: true }, at: 4 * 1000 }],
      () => 'optin-4',
      '2026-11-22 10:00:00.000',
    );
    expect(await profiles.get(a, ada)).toMatchObject({ attributes: { opted_in: false }, redacted: true });
  });

  it('redacts the survivor when the customer found was merged before the opt-out was processed', async () => {
    const a = 'optstep2';
    const old = await customer(a, { email: 'old@x.com' }, { email: 'old@x.com', city: 'Oslo' });
    const young = await customer(a, { vuid: 'yv' }, { name: 'Young' });
    const d = delivery('req-2', a, {
      requester: 'dpo@x.com',
      sent: [vuid('yv')],
      customers: [young],
      identifiers: [vuid('yv')],
    });
    // Between the API's look-up and the processor, one record joins both customers: `old` survives.
    expect(await customer(a, { email: 'old@x.com', vuid: 'yv' }, {})).toBe(old);
    await process(a, d);
    expect(await profiles.get(a, old)).toMatchObject({ attributes: { opted_in: false }, redacted: true });
    expect(await profiles.inOptOutPool(a, [email('old@x.com')])).toEqual([email('old@x.com')]);
    expect(await store.query(a, 'SELECT customers FROM {db}.optout_requests')).toEqual([
      { customers: [old] },
    ]);
  });

  it('leaves redacted profiles and the pool where a rebuild from the store finds them', async () => {
    const a = 'optstep3';
    const cy = await customer(a, { email: 'cy@x.com' }, { email: 'cy@x.com', phone: '1' });
    await process(
      a,
      delivery('req-3', a, {
        requester: 'dpo@x.com',
        sent: [email('ghost@x.com')],
        phone: '1',
        customers: [cy],
        identifiers: [email('ghost@x.com'), email('cy@x.com')],
      }),
    );
    // A fresh process: the hot state comes back from the store.
    const freshProfiles = new MemoryProfileState();
    const freshIdentity = new MemoryIdentityIndex();
    const again = new IdentityRebuild(
      freshIdentity,
      freshProfiles,
      new MemoryConsentState(),
      store,
      new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-optout-meta-'))),
      createLogger('silent'),
      new MemoryIdentifierState(),
    );
    expect(await again.rebuild(a)).toBe(true);
    expect(await freshProfiles.get(a, cy)).toMatchObject({ attributes: { opted_in: false }, redacted: true });
    expect(await freshProfiles.customersWithPhone(a, '1')).toEqual([]);
    expect(await freshProfiles.inOptOutPool(a, [email('ghost@x.com'), email('cy@x.com')])).toHaveLength(2);
    // A pooled identifier reaching a new customer: the identity step marks its profile for redaction.
    const items = [
      {
        message: { id: 'later', receivedAt: Date.now() },
        index: 0,
        at: 1_000_000,
        record: { identifiers: { email: 'ghost@x.com' } },
      },
    ];
    const freshStep = new IdentityStep(freshIdentity, freshProfiles, again);
    const resolved = okValue(await freshStep.run({ account: a, items }));
    const updates = [
      { customerId: resolved.resolutions[0]!.customerId, update: { email: 'ghost@x.com', name: 'G' } },
    ];
    freshStep.redactOptedOut(items, resolved, updates, new Map());
    const [born] = await freshProfiles.apply(a, updates);
    expect(born).toMatchObject({ attributes: { opted_in: false }, redacted: true });
  });

  it('opt-outs run in a lane of their own, in batch order', () => {
    const d = (kind: string) =>
      ({ handle: kind, deliveryCount: 1, message: { kind } }) as unknown as Delivery;
    const runs = runsOfKind([d('events'), d('optout'), d('optout'), d('profiles'), d('subscriptions')]);
    expect(runs.map((r) => r.map((x) => x.message.kind))).toEqual([
      ['events'],
      ['optout', 'optout'],
      ['profiles'],
      ['subscriptions'],
    ]);
    expect(runs[1]!.every(isOptOutDelivery)).toBe(true);
  });
});
