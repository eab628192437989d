import type { ConsentState } from '@cdp/consent';

/**
 * The membership rule: a customer's list memberships, those of the customers merged into it included.
 * The survivor's own decisions win, the merged customers' fill the lists it never decided on (so an
 * unsubscribe after a subscribe counts as not subscribed). Read-time, so a rebuild from the consent
 * history (kept under each customer's own id) gives the same answer. `GET /v3/lists/subscriptions` and
 * the console's subscriber counts both read memberships through it.
 */
export async function listMemberships(
  consent: ConsentState,
  account: string,
  customerId: string,
  merged: readonly string[],
): Promise<Record<string, boolean>> {
  const snapshots = await Promise.all([customerId, ...merged].map((c) => consent.get(account, c)));
  const lists: Record<string, boolean> = {};
  for (const snapshot of snapshots.reverse()) Object.assign(lists, snapshot?.lists);
  return lists;
}
