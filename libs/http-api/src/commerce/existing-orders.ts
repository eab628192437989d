import { ApiError } from '@cdp/contracts';
import type { OrderState } from '@cdp/orders';

/**
 * An order entity update is for an order that exists through an event (spec "Entities (v2)"). The API
 * reads the order state (memory in one process, Redis scaled out; never the store, which the API may
 * not open): an order whose first event has not been processed yet is not found either.
 */
export async function requireExistingOrders(
  orders: OrderState,
  account: string,
  orderIds: string[],
): Promise<void> {
  const unique = [...new Set(orderIds)];
  const found = await Promise.all(unique.map((id) => orders.get(account, id)));
  const missing = unique.filter((_, i) => found[i] === undefined);
  if (missing.length) throw ApiError.notFound(`order not found: ${missing.join(', ')}`);
}
