import type { DriverHealth } from '@cdp/contracts';
import type { AttributeUpdate, Attributes, Identifier } from '@cdp/domain';
import type { FieldTimes } from './field-order.js';

export interface ProfileSnapshot {
  customerId: string;
  /** Increases by one with every change of the customer's profile. */
  version: number;
  attributes: Attributes;
  /** Set on the last snapshot of a profile merged into another: the survivor holds it from now on. */
  mergedInto?: string;
  /**
   * Set once a compliance opt-out redacted the profile (spec "Compliance opt-out"): its personal fields
   * are gone and stay gone — later updates may only change `opted_in`.
   */
  redacted?: boolean;
  /**
   * When each field was last written, in acceptance order (`ProfileUpdate.at`); absent when no update
   * that wrote the profile carried one. The store keeps it with the snapshot, so a rebuild keeps it too.
   */
  times?: FieldTimes;
}

/** What a redacted profile keeps: an opted-out person receives no messages (spec "Consent"). */
export const REDACTED_ATTRIBUTES = { opted_in: false } as const;
/** The only field a later update may change on a redacted profile (an explicit channel opt-in). */
export const REDACTED_WRITABLE = 'opted_in';

/** A profile as the store holds it, read back to rebuild the hot state. */
export interface StoredProfile {
  svc_id: string;
  version: number;
  attributes: Attributes;
  redacted?: boolean;
  times?: FieldTimes;
}

export interface ProfileUpdate {
  customerId: string;
  update: AttributeUpdate;
  /**
   * Customers merged into this one: each profile is folded in field by field in acceptance order (the
   * field written later wins, whichever customer it was written on: `foldFields`, profile-fold.ts), then
   * is gone; its last snapshot comes back with `mergedInto` set.
   */
  absorb?: string[];
  /**
   * Redacts the profile before the update: every field cleared but `opted_in` (false; an already
   * redacted profile keeps its own), and marked so later updates cannot restore personal data. A survivor that absorbs a redacted profile is redacted too:
   * the merge says both are one person.
   */
  redact?: boolean;
  /**
   * The update's place in the order the bus accepted it (`acceptanceOrder`; the same on a redelivery).
   * Given, each field is written only if no update accepted later wrote it already (its last `at` is not
   * higher): a record redelivered after a crash, or applied late by another processor, never overwrites
   * newer state, so every field ends as acceptance order gives it. Without it, the update applies whole.
   */
  at?: number;
}

/** The hot profile of every customer: what `GET /v3/profiles` reads. */
export abstract class ProfileState {
  /**
   * Applies additive updates in order; returns each changed customer's final snapshot, and the last
   * snapshot of every profile merged away.
   */
  abstract apply(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]>;
  /**
   * A customer's profile as a reader must see it. A merge is visible in the identity index once it is
   * resolved, but its profiles are folded only when the batch's updates are applied: `absorbed` (the
   * customers merged into this one, IdentityIndex.absorbedBy) that still hold a profile are folded into
   * the answer as `apply` will fold them, read in one atomic step with the survivor's. So no read
   * answers the survivor of a merge without the merged customer's fields.
   */
  abstract get(
    account: string,
    customerId: string,
    absorbed?: readonly string[],
  ): Promise<ProfileSnapshot | undefined>;
  abstract load(account: string, profiles: AsyncIterable<StoredProfile>): Promise<number>;
  /**
   * The customers whose profile's \`phone\` is exactly this value (spec "Compliance opt-out": phone must
   * match the stored value exactly). Phone is no identifier, so this index lives with the profiles and is
   * kept by \`apply\` and \`load\`.
   */
  abstract customersWithPhone(account: string, phone: string): Promise<string[]>;
  /** Adds identifiers to the account's opt-out pool: a customer they identify later is born redacted. */
  abstract addToOptOutPool(account: string, ids: readonly Identifier[]): Promise<void>;
  /** Which of these identifiers are in the opt-out pool. */
  abstract inOptOutPool(account: string, ids: readonly Identifier[]): Promise<Identifier[]>;
  /** Replaces the account's opt-out pool with the one read back from the store. */
  abstract loadOptOutPool(account: string, ids: AsyncIterable<Identifier>): Promise<number>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
