import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import type { OrderChange, OrderValue } from '@cdp/domain';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { OrderState } from '@cdp/orders';
import { AccountRebuild } from './account-rebuild.js';
import { AnalyticStore, type OrderChangeRow } from '@cdp/store';

/**
 * Rebuilds an account's order state from the store's log of applied changes (`order_changes`), replayed
 * in the order they were first applied: the same purchases are kept, the same tallies come out, and the
 * ids of applied changes are known again, so a message redelivered after the rebuild moves nothing.
 * A memory state is rebuilt for every account at start; a Redis state when an account turns out cold.
 */
@Injectable()
export class OrdersRebuild extends AccountRebuild implements OnApplicationBootstrap {
  constructor(
    private readonly orders: OrderState,
    private readonly store: AnalyticStore,
    metadata: MetadataStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    super(metadata, 'order state');
  }

  /**
   * After every module's init, so after the identity rebuild: Nest runs a module's init hooks
   * concurrently, and a chDB session reads one stream at a time. Still before the bus is consumed.
   */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.orders.persistent) await this.rebuildAll();
  }

  protected async run(account: string): Promise<boolean> {
    if (!(await this.orders.beginRebuild(account))) return false;
    try {
      const started = Date.now();
      // Orders last changed before the retention are forgotten by the state: not read, not loaded.
      const retention = this.orders.retentionMs;
      const since = Number.isFinite(retention) ? started - retention : undefined;
      const changes = await this.orders.load(account, toChanges(this.store.orderChanges(account, since)));
      this.logger.info({ account, changes, ms: Date.now() - started }, 'order state rebuilt from the store');
    } finally {
      await this.orders.endRebuild(account);
    }
    return true;
  }
}

async function* toChanges(rows: AsyncIterable<OrderChangeRow>): AsyncIterable<OrderChange> {
  for await (const row of rows) {
    const change: OrderChange = {
      id: row.change_id,
      orderId: row.order_id,
      kind: row.kind,
      action: row.action as OrderChange['action'],
      ts: Number(row.ts_ms),
      fields: JSON.parse(row.fields) as Record<string, OrderValue>,
    };
    if (row.svc_id) change.customerId = row.svc_id;
    const at = Number(row.at); // 0 on rows written before `at` was kept: none
    if (at > 0) change.at = at;
    // 64-bit integers arrive as JSON strings.
    if (row.subtotal !== null) change.subtotal = Number(row.subtotal);
    if (row.total !== null) change.total = Number(row.total);
    yield change;
  }
}
