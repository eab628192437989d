import { NestFactory } from '@nestjs/core';
import { Module } from '@nestjs/common';
import { loadConfig } from '@cdp/config';
import { DriversModule } from '@cdp/drivers';
import { createLogger } from '@cdp/logger';
import { IdentityRebuild, OrdersRebuild, ProcessorModule } from '@cdp/processor';

/**
 * `npm run identity:rebuild`: rebuilds the identity index, hot profiles and order state of every account from the
 * store (after losing Redis, or to check that it can be done). With CDP_STORE=chdb, stop the
 * processor first: it owns the store's directory. Processors pick a flushed account up by themselves
 * too; this makes it happen now, for all accounts.
 */
const config = loadConfig();
const logger = createLogger(config.logLevel).child({ app: 'rebuild-identity' });
for (const deprecation of config.deprecations) logger.warn(deprecation);

@Module({ imports: [DriversModule.forRoot(config, logger, { openStore: true }), ProcessorModule] })
class RebuildModule {}

const app = await NestFactory.createApplicationContext(RebuildModule, { logger: false });
await app.get(IdentityRebuild).rebuildAll();
await app.get(OrdersRebuild).rebuildAll();
await app.close();
logger.info('every account rebuilt');
