import type { ConsentState } from '@cdp/consent';

/**
 * The membership rule: a customer's list memberships, those of the customers merged into it included.
 * The survivor's own decisions win; a list it never decided on takes the latest decision (by the
 * acceptance time of the change) among the merged customers — so a visitor's later unsubscribe is not
 * undone by another merged visitor's earlier subscribe — and, between decisions of no known or equal
 * time, the one of the smallest customer id, so that every driver (whatever order it lists the merged
 * customers in) answers alike. Read-time, so a rebuild from the consent history (kept under each
 * customer's own id) gives the same answer. `GET /v3/lists/subscriptions` and the console's subscriber
 * counts both read memberships through it.
 */
export async function listMemberships(
  consent: ConsentState,
  account: string,
  customerId: string,
  merged: readonly string[],
): Promise<Record<string, boolean>> {
  const [own, ...others] = await Promise.all([customerId, ...merged].map((c) => consent.get(account, c)));
  const lists: Record<string, boolean> = {};
  const decided: Record<string, { at: number; customerId: string }> = {};
  for (const snapshot of others) {
    if (!snapshot) continue;
    for (const [list, subscribed] of Object.entries(snapshot.lists)) {
      const at = snapshot.at[list] ?? -Infinity;
      const best = decided[list];
      if (best && (best.at > at || (best.at === at && best.customerId < snapshot.customerId))) continue;
      decided[list] = { at, customerId: snapshot.customerId };
      lists[list] = subscribed;
    }
  }
  return Object.assign(lists, own?.lists);
}
