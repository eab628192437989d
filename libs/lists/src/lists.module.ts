import { Module } from '@nestjs/common';
import { ListsService } from './lists.service.js';
import { UnsubscribeLinks } from './unsubscribe-links.service.js';

/**
 * The lists and their unsubscribe links, provided once for the process: the API's routes and the
 * console share one ListsService (one cache). Their MetadataStore comes from the (global) drivers module.
 */
@Module({ providers: [ListsService, UnsubscribeLinks], exports: [ListsService, UnsubscribeLinks] })
export class ListsModule {}
