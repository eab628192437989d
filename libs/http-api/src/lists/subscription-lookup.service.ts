import { Injectable } from '@nestjs/common';
import { ConsentState } from '@cdp/consent';
import { ApiError } from '@cdp/contracts';
import { isJunkIdentifierValue, normalizeIdentifierValue, SVC_ALL } from '@cdp/domain';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { listMemberships, type List } from '@cdp/lists';

export interface SubscriptionStatus {
  customer: Record<string, string>;
  opted_in: boolean;
  subscriptions: { name: string; list_id: string; subscribed: boolean }[];
}

/** The identifiers that can look subscriptions up, in the order they are tried. */
const LOOKUP_BY = ['customer_id', 'email'] as const;

/**
 * `GET /v3/lists/subscriptions`: a customer's global opt-in and membership of every list, read from
 * the hot state. A customer the platform does not know is reported as it would be if it existed:
 * not opted in, on no list.
 */
@Injectable()
export class SubscriptionLookup {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly consent: ConsentState,
  ) {}

  /** Checks the query's identifiers (spec "Errors"), before anything is read. */
  identifiers(query: Record<string, unknown>): { kind: string; value: string }[] {
    const given = LOOKUP_BY.flatMap((kind) => {
      const value = query[kind];
      if (value === undefined) return [];
      if (typeof value !== 'string' || value.length > 1024) {
        throw ApiError.invalid([{ field: kind, reason: 'must be one string of at most 1024 characters' }]);
      }
      return isJunkIdentifierValue(value) ? [] : [{ kind, value }];
    });
    if (given.length) return given;
    if (typeof query.vuid === 'string' && !isJunkIdentifierValue(query.vuid)) {
      throw ApiError.invalid([
        {
          field: 'vuid',
          reason: 'a vuid cannot look up subscriptions; one of email or customer_id is required',
        },
      ]);
    }
    throw ApiError.invalid([
      { field: ['email', 'customer_id'], reason: 'one of email or customer_id is required' },
    ]);
  }

  async status(
    account: string,
    given: { kind: string; value: string }[],
    lists: List[],
    filter: { include?: Set<string>; exclude?: Set<string> },
  ): Promise<SubscriptionStatus> {
    let used = given[0]!;
    let customerId: string | undefined;
    for (const id of given) {
      customerId = await this.identity.lookup(account, {
        kind: id.kind,
        value: normalizeIdentifierValue(id.kind, id.value),
      });
      if (customerId) {
        used = id;
        break;
      }
    }
    const merged = customerId ? await this.identity.absorbedBy(account, customerId) : [];
    const [profile, consent] = customerId
      ? await Promise.all([
          this.profiles.get(account, customerId, merged),
          listMemberships(this.consent, account, customerId, merged),
        ])
      : [undefined, undefined];
    // The profile's opted_in is the global status, whichever way it was set (svc_all, opted_in, profiles).
    const optedIn = profile?.attributes.opted_in === true;
    const subscriptions = lists
      .filter((l) => (!filter.include || filter.include.has(l.list_id)) && !filter.exclude?.has(l.list_id))
      .map((l) => ({
        name: l.name,
        list_id: l.list_id,
        subscribed: l.list_id === SVC_ALL ? optedIn : consent?.[l.list_id] === true,
      }));
    return { customer: { [used.kind]: used.value }, opted_in: optedIn, subscriptions };
  }
}
