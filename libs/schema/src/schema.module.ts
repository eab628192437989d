import { Module } from '@nestjs/common';
import { SchemaRegistry } from './schema.registry.js';

/** The schema registry; its MetadataStore comes from the (global) drivers module. */
@Module({ providers: [SchemaRegistry], exports: [SchemaRegistry] })
export class SchemaModule {}
