import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Module, type Provider } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Delivery, StepResult } from '@cdp/bus';
import { ConsentState, IdentifierState } from '@cdp/consent';
import { MemoryConsentState, MemoryIdentifierState } from '@cdp/consent/memory';
import type { IngestMessage } from '@cdp/contracts';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { MemoryIdentityIndex, MemoryProfileState } from '@cdp/identity/memory';
import { createLogger, LOGGER } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { FileMetadataStore } from '@cdp/metadata/file';
import { OrderState } from '@cdp/orders';
import { MemoryOrderState } from '@cdp/orders/memory';
import { AnalyticStore, ClickHouseStore } from '@cdp/store';
import { ChdbTransport } from '@cdp/store/chdb';
import { IdentifierUpdatesStep } from '../identifier-updates.step.js';
import { IdentityRebuild } from '../identity-rebuild.service.js';
import { IdentityStep } from '../identity.step.js';
import { IngestPipeline } from '../ingest.pipeline.js';
import { OptOutStep } from '../optout.step.js';
import { OrdersRebuild } from '../orders-rebuild.service.js';
import { OrdersStep } from '../orders.step.js';
import { ProcessorModule } from '../processor.module.js';
import { ProductsStep } from '../products.step.js';
import { StepWriter } from '../step-writer.js';
import { SubscriptionsStep } from '../subscriptions.step.js';

/** A chDB store in a directory of its own (one per spec file: chDB opens one directory per process). */
export function tempChdbStore(name: string): ClickHouseStore {
  return new ClickHouseStore(new ChdbTransport(mkdtempSync(join(tmpdir(), `cdp-${name}-`))));
}

/** The processor's ports a test may bring itself; the others are fresh embedded drivers. */
export interface ProcessorPorts {
  metadata: MetadataStore;
  identity: IdentityIndex;
  profiles: ProfileState;
  consent: ConsentState;
  identifierState: IdentifierState;
  orders: OrderState;
}

/**
 * The processor module as the app composes it (Nest's testing module resolves every step and service),
 * on real embedded drivers: the memory identity index, profile, consent, identifier and order state,
 * a file metadata store, and the given chDB store (or a `store` in front of it, for a test that steers
 * the store's writes). A test overrides a port by name: `newProcessor(store, { orders: mine })`.
 * Every call builds fresh hot state; the store is the caller's. Lifecycle hooks (the rebuilds at
 * start) do not run: a test calls a rebuild itself when it wants one.
 */
export async function newProcessor(store: AnalyticStore, overrides: Partial<ProcessorPorts> = {}) {
  const ports: ProcessorPorts = {
    metadata: overrides.metadata ?? new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-processor-meta-'))),
    identity: overrides.identity ?? new MemoryIdentityIndex(),
    profiles: overrides.profiles ?? new MemoryProfileState(),
    consent: overrides.consent ?? new MemoryConsentState(),
    identifierState: overrides.identifierState ?? new MemoryIdentifierState(),
    orders: overrides.orders ?? new MemoryOrderState(),
  };
  const providers: Provider[] = [
    { provide: AnalyticStore, useValue: store },
    { provide: MetadataStore, useValue: ports.metadata },
    { provide: IdentityIndex, useValue: ports.identity },
    { provide: ProfileState, useValue: ports.profiles },
    { provide: ConsentState, useValue: ports.consent },
    { provide: IdentifierState, useValue: ports.identifierState },
    { provide: OrderState, useValue: ports.orders },
    { provide: LOGGER, useValue: createLogger('silent') },
  ];
  // The drivers module's place: global, as the apps' drivers module is.
  const drivers = { module: TestDriversModule, global: true, providers, exports: providers };
  const moduleRef: TestingModule = await Test.createTestingModule({
    imports: [drivers, ProcessorModule],
  }).compile();
  return {
    moduleRef,
    ...ports,
    identityRebuild: moduleRef.get(IdentityRebuild),
    ordersRebuild: moduleRef.get(OrdersRebuild),
    identityStep: moduleRef.get(IdentityStep),
    ordersStep: moduleRef.get(OrdersStep),
    productsStep: moduleRef.get(ProductsStep),
    subscriptionsStep: moduleRef.get(SubscriptionsStep),
    optOutStep: moduleRef.get(OptOutStep),
    identifierUpdatesStep: moduleRef.get(IdentifierUpdatesStep),
    writer: moduleRef.get(StepWriter),
    pipeline: moduleRef.get(IngestPipeline),
  };
}

@Module({})
class TestDriversModule {}

let sequence = 0;

/**
 * A delivery of a message as the bus hands it over (first delivery unless said otherwise; the bus
 * sequence, its place in the acceptance order, 1 unless said otherwise).
 */
export function deliveryOf<M extends IngestMessage>(
  message: M,
  deliveryCount = 1,
  busSequence = 1,
): Delivery & { message: M } {
  return { handle: message.id, deliveryCount, sequence: busSequence, message };
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
