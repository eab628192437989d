import { Module } from '@nestjs/common';
import { SchemaRegistry } from './schema.registry.js';
import { AccountModules } from './account-modules.js';

/** The schema registry and the account's modules; their MetadataStore comes from the (global) drivers module. */
@Module({ providers: [SchemaRegistry, AccountModules], exports: [SchemaRegistry, AccountModules] })
export class SchemaModule {}
