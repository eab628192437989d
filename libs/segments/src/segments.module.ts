import { Module } from '@nestjs/common';
import { SchemaModule } from '@cdp/schema';
import { SegmentsService } from './segments.service.js';

/**
 * The accounts' segments, provided once for the process: the API's routes, GraphQL and the console read
 * one cache. Its MetadataStore comes from the (global) drivers module.
 */
@Module({ imports: [SchemaModule], providers: [SegmentsService], exports: [SegmentsService] })
export class SegmentsModule {}
