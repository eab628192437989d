import { Module } from '@nestjs/common';
import { SchemaModule } from '@cdp/schema';
import { ProfileLookup } from './profile-lookup.service.js';

/**
 * The one provider of ProfileLookup: `GET /v3/profiles` (HttpApiModule) and the console's customer page
 * (ConsoleApiModule) import it, so a process holds one. Its IdentityIndex and ProfileState come from the
 * (global) drivers module.
 */
@Module({ imports: [SchemaModule], providers: [ProfileLookup], exports: [ProfileLookup] })
export class ProfileLookupModule {}
