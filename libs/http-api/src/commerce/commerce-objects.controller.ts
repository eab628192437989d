import { Controller, Req } from '@nestjs/common';
import { ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { batchOf, orderUpdateSchema, productSchema, type AcceptedBody } from '@cdp/contracts';
import type { OrderUpdateRecord, ProductRecord } from '@cdp/domain';
import { OrderState } from '@cdp/orders';
import { CurrentPrincipal } from '../auth/principal.js';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { IngestRoute } from '../ingest/ingest-route.decorator.js';
import { OrderUpdatesBatch, ProductsBatch } from './commerce.pipes.js';
import { BatchBody, type ValidatedBatch } from '../ingest/batch-validation.pipe.js';
import { requireExistingOrders } from './existing-orders.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';

/**
 * `POST /v3/objects/{object}` for the built-in commerce objects: the body is one record of the object's
 * fields or an array of 1 to 1000. Static routes, so the router picks them before a `:object` route.
 */
@ApiTags('objects')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('objects')
@Controller('v3/objects')
export class CommerceObjectsController {
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly orders: OrderState,
  ) {}

  /** The product feed: additive, no history (an updated value replaces the old one). */
  @IngestRoute({ path: 'products', body: { schema: batchOf(productSchema) } })
  async products(
    @BatchBody(ProductsBatch) batch: ValidatedBatch<ProductRecord>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    return this.publisher.acceptBatch('products', batch, { id: request.id, account: principal.account });
  }

  /** Field updates of existing orders, as `POST /v2/entities` type order: no event is produced. */
  @IngestRoute({ path: 'orders', body: { schema: batchOf(orderUpdateSchema) } })
  @ApiResponse({ status: 404, description: 'an order that does not exist' })
  async orderUpdates(
    @BatchBody(OrderUpdatesBatch) batch: ValidatedBatch<OrderUpdateRecord>,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<AcceptedBody> {
    const ids = batch.records.map((r) => r.order_id);
    await requireExistingOrders(this.orders, principal.account, ids);
    return this.publisher.acceptBatch('order-updates', batch, { id: request.id, account: principal.account });
  }
}
