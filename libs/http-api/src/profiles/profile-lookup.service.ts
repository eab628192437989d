import { Injectable } from '@nestjs/common';
import { ApiError } from '@cdp/contracts';
import {
  ALIAS_PREFIX,
  NAMED_IDENTIFIERS,
  extractIdentifiers,
  isIdentifierField,
  type Attributes,
} from '@cdp/domain';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { SchemaRegistry } from '@cdp/schema';

/** Reads a profile from the hot state by any identifier kind, alias included. */
@Injectable()
export class ProfileLookup {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly schema: SchemaRegistry,
  ) {}

  async find(account: string, query: Record<string, unknown>): Promise<Attributes> {
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
      const customerId = await this.identity.lookup(account, id);
      if (!customerId) continue;
      const absorbed = await this.identity.absorbedBy(account, customerId);
      const profile = await this.profiles.get(account, customerId, absorbed);
      if (profile) return profile.attributes;
    }
    throw ApiError.notFound('unable to locate a customer with the given identifiers');
  }
}
