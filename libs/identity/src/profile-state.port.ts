import type { DriverHealth } from '@cdp/contracts';
import type { AttributeUpdate, Attributes } from '@cdp/domain';

export interface ProfileSnapshot {
  customerId: string;
  /** Increases by one with every change of the customer's profile. */
  version: number;
  attributes: Attributes;
  /** Set on the last snapshot of a profile merged into another: the survivor holds it from now on. */
  mergedInto?: string;
}

export interface ProfileUpdate {
  customerId: string;
  update: AttributeUpdate;
  /**
   * Customers merged into this one: each profile fills the fields this one lacks (the survivor's own
   * values win), then is gone; its last snapshot comes back with `mergedInto` set.
   */
  absorb?: string[];
}

/** The hot profile of every customer: what `GET /v3/profiles` reads. */
export abstract class ProfileState {
  /**
   * Applies additive updates in order; returns each changed customer's final snapshot, and the last
   * snapshot of every profile merged away.
   */
  abstract apply(account: string, updates: ProfileUpdate[]): Promise<ProfileSnapshot[]>;
  abstract get(account: string, customerId: string): Promise<ProfileSnapshot | undefined>;
  abstract load(
    account: string,
    profiles: AsyncIterable<{ svc_id: string; version: number; attributes: Attributes }>,
  ): Promise<number>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
