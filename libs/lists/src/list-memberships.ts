import type { ConsentState } from '@cdp/consent';

/**
 * The membership rule: a customer's list memberships, those of the customers merged into it included.
 * Each list takes the latest decision (by the acceptance time of the change) among the survivor and the
 * customers merged into it — the person's last word, whichever of their identities said it, so a later
 * unsubscribe is never undone by an earlier subscribe, and a chain of merges answers as one merge of all.
 * Decisions of no known time (stored before changes carried one) rank below every timed one; between
 * those, and between equal times, the survivor's own wins, then the smallest customer id's, so that every
 * driver (whatever order it lists the merged customers in) answers alike. Read-time, so a rebuild from
 * the consent history (kept under each customer's own id) gives the same answer. `GET
 * /v3/lists/subscriptions` and the console's subscriber counts both read memberships through it.
 */
export async function listMemberships(
  consent: ConsentState,
  account: string,
  customerId: string,
  merged: readonly string[],
): Promise<Record<string, boolean>> {
  const snapshots = await Promise.all([customerId, ...merged].map((c) => consent.get(account, c)));
  const lists: Record<string, boolean> = {};
  const decided: Record<string, { at: number; rank: string }> = {};
  for (const snapshot of snapshots) {
    if (!snapshot) continue;
    // The survivor ranks before any merged customer on a tie ('' sorts first).
    const rank = snapshot.customerId === customerId ? '' : snapshot.customerId;
    for (const [list, subscribed] of Object.entries(snapshot.lists)) {
      const at = snapshot.at[list] ?? -Infinity;
      const best = decided[list];
      if (best && (best.at > at || (best.at === at && best.rank < rank))) continue;
      decided[list] = { at, rank };
      lists[list] = subscribed;
    }
  }
  return lists;
}
