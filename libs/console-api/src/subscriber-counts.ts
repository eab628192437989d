import { Injectable } from '@nestjs/common';
import { ConsentState } from '@cdp/consent';
import { SVC_ALL } from '@cdp/domain';
import { IdentityIndex } from '@cdp/identity';
import { listMemberships } from '@cdp/lists';

/**
 * Current subscribers per list, for the console's Lists page.
 *
 * Why the hot consent state and not the store's consent history: the history (latest row per customer and
 * list, ClickHouse `argMax`) would be one cheap query, but the API role has no store under the scaled-out
 * chDB wiring, the store trails the hot state until the processor's batch lands, and its merges
 * (`customer_survivors`) name only each loser's direct survivor, so a chain of merges needs resolving
 * anyway. The hot state is what `GET /v3/lists/subscriptions` answers from; counting from it with the same
 * rule gives exactly the answers a sender would get customer by customer:
 * - a customer is counted under its survivor (the identity index's answer), once, however many customers
 *   were merged into it;
 * - its membership of a list is the latest decision on it among the customer and those merged into it
 *   (the lookup's rule, `listMemberships`: an unsubscribe after a subscribe counts as not subscribed).
 * The cost is a walk of the account's customers with a decision (a page of its consent index at a time in
 * Redis) plus identity reads per customer: fine for a page opened by a person, not for a hot path.
 * `svc_all` is not counted: the global opt-in is the profile's `opted_in`, which no list walk sees.
 */
@Injectable()
export class SubscriberCounts {
  constructor(
    private readonly consent: ConsentState,
    private readonly identity: IdentityIndex,
  ) {}

  async count(account: string): Promise<Map<string, number>> {
    const survivors = new Set<string>();
    for await (const snapshot of this.consent.customers(account)) {
      survivors.add(await this.survivorOf(account, snapshot.customerId));
    }
    const counts = new Map<string, number>();
    for (const customer of survivors) {
      for (const [list, subscribed] of Object.entries(await this.memberships(account, customer))) {
        if (subscribed && list !== SVC_ALL) counts.set(list, (counts.get(list) ?? 0) + 1);
      }
    }
    return counts;
  }

  /** The customer a merged customer's identifiers resolve to now; itself when it was not merged. */
  private async survivorOf(account: string, customerId: string): Promise<string> {
    const [identifier] = await this.identity.identifiersOf(account, customerId);
    if (!identifier) return customerId;
    return (await this.identity.lookup(account, identifier)) ?? customerId;
  }

  /** The membership rule of `GET /v3/lists/subscriptions` (listMemberships), on the survivor. */
  private async memberships(account: string, customerId: string): Promise<Record<string, boolean>> {
    const merged = await this.identity.absorbedBy(account, customerId);
    return listMemberships(this.consent, account, customerId, merged);
  }
}
