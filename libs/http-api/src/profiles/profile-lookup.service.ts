import { Injectable } from '@nestjs/common';
import { ApiError, ExactNumber } from '@cdp/contracts';
import {
  ALIAS_PREFIX,
  NAMED_IDENTIFIERS,
  extractIdentifiers,
  isIdentifierField,
  type AttributeValue,
  type Attributes,
  type Identifier,
} from '@cdp/domain';
import { IdentityIndex, ProfileState, type ProfileSnapshot } from '@cdp/identity';
import { SchemaRegistry } from '@cdp/schema';

/** Reads a profile from the hot state by any identifier kind, alias included. */
@Injectable()
export class ProfileLookup {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly schema: SchemaRegistry,
  ) {}

  /**
   * The profile's attributes as a read answers them: a custom number kept as its exact decimal text (a
   * double would round it, readCustomValue) is an ExactNumber, written as a JSON number by exactJson.
   */
  async find(
    account: string,
    query: Record<string, unknown>,
  ): Promise<Record<string, AttributeValue | ExactNumber>> {
    const attributes = await this.attributes(account, query);
    const fields = (await this.schema.read(account)).customFields('customers');
    const out: Record<string, AttributeValue | ExactNumber> = { ...attributes };
    for (const [name, value] of Object.entries(attributes))
      if (fields[name] === 'number' && typeof value === 'string') out[name] = new ExactNumber(value);
    return out;
  }

  private async attributes(account: string, query: Record<string, unknown>): Promise<Attributes> {
    return (await this.customer(account, query)).profile.attributes;
  }

  /**
   * The customer the query's first known identifier names (customer_id, email, then the others, the
   * account's custom identifiers among them), with the customers merged into it and its profile as a
   * read sees it. The console's customer page reads through this too.
   */
  async customer(account: string, query: Record<string, unknown>): Promise<FoundCustomer> {
    // The account's custom identifiers find customers too; the schema is read only when one may be asked.
    const custom = Object.keys(query).some((k) => !isIdentifierField(k))
      ? (await this.schema.read(account)).identifierNames
      : undefined;
    const ids = extractIdentifiers(query, custom);
    if (ids.length === 0) {
      throw ApiError.invalid([
        {
          field: [...NAMED_IDENTIFIERS, `${ALIAS_PREFIX}<name>`, ...(custom ?? [])],
          reason: 'one identifier is required',
        },
      ]);
    }
    for (const id of ids) {
      const found = await this.identity.find(account, id);
      if (!found) continue;
      const { customerId, absorbed } = found;
      const profile = await this.profiles.get(account, customerId, absorbed);
      if (profile) return { customerId, absorbed, profile, foundBy: id };
    }
    throw ApiError.notFound('unable to locate a customer with the given identifiers');
  }
}

export interface FoundCustomer {
  customerId: string;
  /** The customers merged into it, directly or through others. */
  absorbed: string[];
  profile: ProfileSnapshot;
  /** The identifier that found it. */
  foundBy: Identifier;
}
