import { withArticle } from './wording.js';
import { ORDER_ACTIONS } from './orders.js';

/**
 * The standard event type/action pairs of the spec's event table, with the data fields each one needs.
 * The product action the spec prints as "the service" is `detail` (spec/NOTES.md); `log_out` is how
 * the browser SDK writes `logout`. Any other type, or another action of a standard type, is a custom
 * event: accepted with whatever defined fields it has.
 */
export const STANDARD_EVENTS: Readonly<
  Record<string, { actions: readonly string[]; requires: readonly string[] }>
> = {
  product: { actions: ['add_to_cart', 'remove_from_cart', 'detail', 'listing'], requires: ['product_id'] },
  pageview: { actions: [], requires: [] },
  account: { actions: ['login', 'logout', 'log_out', 'register', 'checkout_form'], requires: [] },
  newsletter: { actions: ['subscribe'], requires: [] },
  navigation: { actions: ['search'], requires: [] },
  list: { actions: ['subscribe'], requires: [] },
  order: { actions: ORDER_ACTIONS, requires: ['order'] },
};

export function isStandardEvent(type: string, action: string): boolean {
  const known = Object.hasOwn(STANDARD_EVENTS, type) ? STANDARD_EVENTS[type] : undefined;
  return known !== undefined && (known.actions.length === 0 ? action === '' : known.actions.includes(action));
}

/**
 * What a standard event lacks: `{field, reason}` per problem (field paths as the sender wrote them).
 * Product events need `product_id` (they may name only it: the product's own fields come from the
 * product feed). An `order` event must be one of the four order actions and carry `data.order`: the
 * order's state depends on them, so a custom action is refused rather than stored as an order nobody
 * can account for.
 */
export function standardEventProblems(
  type: string,
  action: string,
  data: Readonly<Record<string, unknown>>,
): { field: string; reason: string }[] {
  if (type === 'order' && !(ORDER_ACTIONS as readonly string[]).includes(action)) {
    return [{ field: 'action', reason: `an order event's action is one of ${ORDER_ACTIONS.join(', ')}` }];
  }
  if (!isStandardEvent(type, action)) return [];
  const spec = STANDARD_EVENTS[type]!;
  return spec.requires
    .filter((field) => data[field] === undefined || data[field] === null || data[field] === '')
    .map((field) => ({
      field: `data.${field}`,
      reason: `is required for ${withArticle([type, action, 'event'].filter(Boolean).join(' '))}`,
    }));
}
