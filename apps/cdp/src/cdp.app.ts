import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AppConfig } from '@cdp/config';
import type { Logger } from '@cdp/logger';
import { createApp } from '@cdp/runtime';
import { CdpModule } from './cdp.module.js';

/** The all-in-one application (not yet listening); main and the end-to-end tests share it. */
export function createCdpApp(config: AppConfig, logger: Logger): Promise<NestFastifyApplication> {
  return createApp(CdpModule.forRoot(config, logger), config, logger, { openapi: true, consume: true });
}
