import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Delivery, StepResult } from '@cdp/bus';
import { MemoryConsentState, MemoryIdentifierState } from '@cdp/consent/memory';
import type { IngestMessage } from '@cdp/contracts';
import { MemoryIdentityIndex, MemoryProfileState } from '@cdp/identity/memory';
import { createLogger } from '@cdp/logger';
import { FileMetadataStore } from '@cdp/metadata/file';
import { MemoryOrderState } from '@cdp/orders/memory';
import { SchemaRegistry } from '@cdp/schema';
import { AnalyticStore, ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { CustomColumns } from '../custom-columns.service.js';
import { IdentityRebuild } from '../identity-rebuild.service.js';
import { IdentityStep } from '../identity.step.js';
import { IngestPipeline } from '../ingest.pipeline.js';
import { ObjectsWriter } from '../objects.writer.js';
import { OptOutStep } from '../optout.step.js';
import { OrdersRebuild } from '../orders-rebuild.service.js';
import { OrdersStep } from '../orders.step.js';
import { ProductsStep } from '../products.step.js';
import { SubscriptionsStep } from '../subscriptions.step.js';
import { IdentifierUpdatesStep } from '../identifier-updates.step.js';
import { StepWriter } from '../step-writer.js';

/** A chDB store in a directory of its own (one per spec file: chDB opens one directory per process). */
export function tempChdbStore(name: string): ClickHouseStore {
  return new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), `cdp-${name}-`))));
}

/**
 * The processor's steps built on real embedded drivers: the memory identity index, profile, consent
 * and order state, a file metadata store, and the given chDB store (or a `store` in front of it, for a
 * test that steers the store's writes). Every call builds fresh hot state; the store is the caller's.
 */
export function buildProcessor(store: AnalyticStore) {
  const logger = createLogger('silent');
  const metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-processor-meta-')));
  const identity = new MemoryIdentityIndex();
  const profiles = new MemoryProfileState();
  const consent = new MemoryConsentState();
  const identifierState = new MemoryIdentifierState();
  const orders = new MemoryOrderState();
  const schema = new SchemaRegistry(metadata);
  const identityStep = new IdentityStep(
    identity,
    profiles,
    new IdentityRebuild(identity, profiles, consent, store, metadata, logger, identifierState),
    undefined,
    undefined,
    schema,
  );
  const ordersStep = new OrdersStep(orders, new OrdersRebuild(orders, store, metadata, logger));
  const productsStep = new ProductsStep(store);
  const subscriptionsStep = new SubscriptionsStep(identityStep, consent);
  const optOutStep = new OptOutStep(identity, profiles, identityStep);
  const writer = new StepWriter(store, identityStep);
  const pipeline = new IngestPipeline(
    identityStep,
    store,
    new CustomColumns(schema, store, logger),
    new ObjectsWriter(schema, store, logger),
    subscriptionsStep,
    ordersStep,
    productsStep,
    optOutStep,
    writer,
    new IdentifierUpdatesStep(identityStep, identifierState, consent, profiles),
  );
  return {
    metadata,
    identity,
    profiles,
    consent,
    orders,
    identityStep,
    ordersStep,
    productsStep,
    subscriptionsStep,
    optOutStep,
    writer,
    pipeline,
  };
}

let sequence = 0;

/** A delivery of a message as the bus hands it over (first delivery unless said otherwise). */
export function deliveryOf<M extends IngestMessage>(
  message: M,
  deliveryCount = 1,
): Delivery & { message: M } {
  return { handle: message.id, deliveryCount, sequence: 1, message };
}

/** An events message of `records` for `account`, with an id unique to this run. */
export function eventsMessage(
  account: string,
  records: Record<string, unknown>[],
  id?: string,
): IngestMessage {
  return {
    id: id ?? `m${++sequence}-${Date.now()}`,
    account,
    kind: 'events',
    receivedAt: Date.now(),
    records: records.map((r) => ({
      action: '',
      ts: Date.now(),
      channel: 'offline',
      data: {},
      ...r,
    })),
  } as unknown as IngestMessage;
}

/** The value of a step's result, which the test expects to be ok. */
export function okValue<T>(result: StepResult<T>): T {
  if (result.type !== 'ok') throw new Error(`expected ok, the step said ${result.type}: ${result.reason}`);
  return result.value;
}
