import { Injectable } from '@nestjs/common';
import { IdentifierState, type IdentifierStatus, type MetadataValue } from '@cdp/consent';
import { ApiError } from '@cdp/contracts';
import {
  isJunkIdentifierValue,
  isMessagingIdentifier,
  isStateIdentifier,
  MESSAGING_IDENTIFIERS_TEXT,
  normalizeStateValue,
  STATE_IDENTIFIERS_TEXT,
} from '@cdp/domain';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { SchemaRegistry } from '@cdp/schema';

export interface ConsentStatus {
  identifier_field_name: string;
  identifier_value: string;
  consent: boolean | null;
  consent_update_reason: string | null;
  consent_update_ts: number | null;
}

export interface ReachabilityStatus {
  identifier_field_name: string;
  identifier_value: string;
  reachable: boolean | null;
  reachable_update_type: string | null;
  reachable_update_reason: string | null;
  reachable_update_ts: number | null;
}

export interface MetadataStatus {
  identifier_field_name: string;
  identifier_value: string;
  metadata: Record<string, MetadataValue>;
  metadata_update_ts: number | null;
}

/** Unix seconds, as the original API answers times. */
const seconds = (ms: number) => ms / 1000;

/**
 * `GET /v3/consent|reachability|identifiers/{field}?id=`: an identifier value's state, read from the
 * hot state. An identifier the platform has never heard of answers with nulls (nothing is known),
 * not 404: the original API's clients read the body either way.
 */
@Injectable()
export class IdentifierLookup {
  constructor(
    private readonly state: IdentifierState,
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly schema: SchemaRegistry,
  ) {}

  /**
   * Checks the path's field (the account's custom identifiers count, and for consent those created
   * with `messaging: true`) and the `id` query parameter before anything is read.
   */
  async check(
    account: string,
    field: string,
    id: unknown,
    messaging = false,
  ): Promise<{ field: string; sent: string; value: string }> {
    const schema = await this.schema.read(account);
    if (
      !isStateIdentifier(field, schema.identifierNames) ||
      (messaging && !isMessagingIdentifier(field, schema.messagingIdentifiers))
    ) {
      throw ApiError.invalid([
        {
          field: 'identifier_field_name',
          reason: messaging
            ? `must be a messaging identifier: ${MESSAGING_IDENTIFIERS_TEXT}`
            : `must be an identifier field: ${STATE_IDENTIFIERS_TEXT}`,
        },
      ]);
    }
    if (typeof id !== 'string' || id.length === 0 || id.length > 1024 || isJunkIdentifierValue(id))
      throw ApiError.invalid([
        { field: 'id', reason: 'is required: one identifier value of at most 1024 characters' },
      ]);
    return { field, sent: id, value: normalizeStateValue(field, id) };
  }

  private status(
    account: string,
    id: { field: string; value: string },
  ): Promise<IdentifierStatus | undefined> {
    return this.state.get(account, id.field, id.value);
  }

  /**
   * Email consent is the profile's `opted_in` (one truth with `svc_all` and `POST /v3/profiles`); the
   * reason and time of the last `/v3/consent` change are shown while the status is still the one it set.
   * Other messaging identifiers have their own consent.
   */
  async consent(account: string, id: { field: string; sent: string; value: string }): Promise<ConsentStatus> {
    const status = await this.status(account, id);
    let consent = status?.consent?.consent ?? null;
    if (id.field === 'email') {
      const customerId = await this.identity.lookup(account, { kind: 'email', value: id.value });
      const optedIn = customerId
        ? (await this.profiles.get(account, customerId))?.attributes.opted_in
        : undefined;
      consent = typeof optedIn === 'boolean' ? optedIn : null;
    }
    const own = status?.consent && status.consent.consent === consent ? status.consent : undefined;
    return {
      identifier_field_name: id.field,
      identifier_value: id.sent,
      consent,
      consent_update_reason: own?.reason ?? null,
      consent_update_ts: own ? seconds(own.ts) : null,
    };
  }

  async reachability(
    account: string,
    id: { field: string; sent: string; value: string },
  ): Promise<ReachabilityStatus> {
    const r = (await this.status(account, id))?.reachability;
    return {
      identifier_field_name: id.field,
      identifier_value: id.sent,
      reachable: r?.reachable ?? null,
      reachable_update_type: r?.update_type ?? null,
      reachable_update_reason: r?.reason ?? null,
      reachable_update_ts: r ? seconds(r.ts) : null,
    };
  }

  async metadata(
    account: string,
    id: { field: string; sent: string; value: string },
  ): Promise<MetadataStatus> {
    const m = (await this.status(account, id))?.metadata;
    return {
      identifier_field_name: id.field,
      identifier_value: id.sent,
      metadata: m?.fields ?? {},
      metadata_update_ts: m ? seconds(m.ts) : null,
    };
  }
}
