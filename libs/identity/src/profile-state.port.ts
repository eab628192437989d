import type { DriverHealth } from '@cdp/contracts';
import type { AttributeUpdate, Attributes } from '@cdp/domain';

export interface ProfileSnapshot {
  customerId: string;
  /** Increases by one with every change of the customer's profile. */
  version: number;
  attributes: Attributes;
}

/** The hot profile of every customer: what `GET /v3/profiles` reads. */
export abstract class ProfileState {
  /** Applies additive updates in order; returns each changed customer's final snapshot. */
  abstract apply(
    account: string,
    updates: { customerId: string; update: AttributeUpdate }[],
  ): Promise<ProfileSnapshot[]>;
  abstract get(account: string, customerId: string): Promise<ProfileSnapshot | undefined>;
  abstract load(
    account: string,
    profiles: AsyncIterable<{ svc_id: string; version: number; attributes: Attributes }>,
  ): Promise<number>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}
