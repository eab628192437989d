import { Injectable } from '@nestjs/common';
import { acceptanceOrder, ok, type Delivery, type Step, type StepResult } from '@cdp/bus';
import type { OptOutMessage } from '@cdp/contracts';
import { identityKey, toStoreTime, type Identifier } from '@cdp/domain';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import type { StoreBatch } from '@cdp/store';
import { IdentityStep } from './identity.step.js';
import { collectRows, emptyBatch } from './store-rows.js';

export interface OptOutInput {
  account: string;
  delivery: Delivery & { message: OptOutMessage };
}

/** An opt-out's writes: its rows, and the customers whose older snapshots are redacted after them. */
export interface OptOutWrite {
  rows: StoreBatch;
  redact: string[];
}

export function isOptOutDelivery(d: Delivery): d is Delivery & { message: OptOutMessage } {
  return d.message.kind === 'optout';
}

const asText = (id: Identifier) => `${id.kind}:${id.value}`;

/**
 * A compliance opt-out message (spec "Compliance opt-out"): every customer the request reaches is
 * redacted in the hot state (and, through the rows and `redact` it returns, in the store), its
 * identifiers join the opt-out pool (hot and stored), and the request is audited. The runner takes an
 * account's opt-outs one message at a time, in the order they came, and stores a batch's together
 * (one redaction for all the customers they reach: IngestPipeline).
 *
 * The API found the customers when it accepted the request; a merge may have happened since, so the
 * identifiers are looked up again here and the survivors redacted.
 */
@Injectable()
export class OptOutStep implements Step<OptOutInput, OptOutWrite> {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly identityStep: IdentityStep,
  ) {}

  async run({ account, delivery }: OptOutInput): Promise<StepResult<OptOutWrite>> {
    const { message } = delivery;
    const rows = emptyBatch();
    const redact = new Set<string>();
    for (const [index, record] of message.records.entries()) {
      // Its place in acceptance order: an opt-in accepted before it but applied later (a redelivery,
      // another processor) must not opt the redacted person in again.
      const at = acceptanceOrder(delivery, index);
      const customers = new Set<string>();
      for (const id of record.identifiers) {
        const customer = await this.identity.lookup(account, id);
        if (customer) customers.add(customer);
      }
      // An index that lost the account (a flushed Redis, not rebuilt yet) finds nobody: the customers
      // the API found are redacted all the same.
      if (customers.size === 0) for (const c of record.customers) customers.add(c);
      const pool = new Map<string, Identifier>();
      for (const id of record.identifiers) pool.set(identityKey(id), id);
      for (const c of customers)
        for (const id of await this.identity.identifiersOf(account, c)) pool.set(identityKey(id), id);
      const identifiers = [...pool.values()];

      const now = toStoreTime(Date.now());
      collectRows(rows, {
        customers: await this.identityStep.applyProfiles(
          account,
          [...customers].map((customerId) => ({ customerId, update: { opted_in: false }, redact: true, at })),
          () => message.id,
          now,
        ),
        optoutPool: identifiers.map((id) => ({ ...id, msg_id: message.id, created_at: now })),
        optoutRequests: [
          {
            msg_id: message.id,
            requester: record.requester,
            api_key: message.key,
            requested_at: toStoreTime(message.receivedAt),
            processed_at: now,
            sent: record.sent.map(asText),
            phone: record.phone ?? null,
            customers: [...customers].sort(),
            identifiers: identifiers.map(asText),
          },
        ],
      });
      await this.profiles.addToOptOutPool(account, identifiers);
      for (const c of customers) redact.add(c);
    }
    return ok({ rows, redact: [...redact] });
  }
}
