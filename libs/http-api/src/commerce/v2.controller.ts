import { Controller, Req } from '@nestjs/common';
import { ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import {
  accepted,
  batchOf,
  entitySchema,
  v2EventSchema,
  type AcceptedBody,
  type IngestMessage,
} from '@cdp/contracts';
import type { EventRecord } from '@cdp/domain';
import { OrderState } from '@cdp/orders';
import { CurrentPrincipal } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { type EntityRecord } from '@cdp/records';
import { EntitiesBatch, V2EventsBatch } from './commerce.pipes.js';
import { BatchBody, type ValidatedBatch } from '../ingest/batch-validation.pipe.js';
import { requireExistingOrders } from './existing-orders.js';
import { EventsIngest } from '../events/events.ingest.js';
import { IngestRoute } from '../ingest/ingest-route.decorator.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { inferClientIp } from '../events/client-ip.js';

/** The v2 ingestion endpoints; the guard reads their key from `Svc-Tracker-Id` (spec "Authentication" rule 2). */
@ApiTags('v2')
@ApiHeader({ name: 'Svc-Tracker-Id', description: 'the tracker id (public key)', required: true })
@Controller('v2')
export class V2Controller {
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly orders: OrderState,
    private readonly eventsIngest: EventsIngest,
  ) {}

  /**
   * Customers, products and order updates, additive (only supplied fields change; "" or null unsets).
   * A request mixing types is published as one message per type: each is idempotent, so a retry after
   * a 503 between two publishes repeats nothing harmful.
   */
  @RateLimit('objects')
  @IngestRoute({ path: 'entities', body: { schema: batchOf(entitySchema) } })
  @ApiResponse({ status: 404, description: 'an order update names an order that does not exist' })
  async entities(
    @BatchBody(EntitiesBatch) { records: parsed, receivedAt }: ValidatedBatch<EntityRecord>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    await requireExistingOrders(
      this.orders,
      principal.account,
      parsed.flatMap((p) => (p.kind === 'order-updates' ? [p.record.order_id] : [])),
    );
    const byKind = new Map<EntityRecord['kind'], EntityRecord['record'][]>();
    for (const { kind, record } of parsed) byKind.set(kind, [...(byKind.get(kind) ?? []), record]);
    for (const [kind, records] of byKind) {
      const id = byKind.size === 1 ? request.id : `${request.id}.${kind}`;
      await this.publisher.publish({
        id,
        account: principal.account,
        kind,
        receivedAt,
        records,
      } as IngestMessage);
    }
    return accepted(parsed.map((p) => p.record));
  }

  /** Events in the v2 shape (`{type: order, data: {action, email, order}}`), processed as v3 events. */
  @RateLimit('events')
  @IngestRoute({ path: 'events', body: { schema: batchOf(v2EventSchema) } })
  async events(
    @BatchBody(V2EventsBatch) batch: ValidatedBatch<EventRecord>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    inferClientIp(batch.records, principal, request.ip);
    return this.eventsIngest.accept(batch, request.id, principal.account);
  }
}
