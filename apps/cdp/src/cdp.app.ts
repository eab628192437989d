import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { BusTransport, EventBus } from '@cdp/bus';
import type { AppConfig } from '@cdp/config';
import { buildOpenApi, fastifyOptions, installHttpHooks } from '@cdp/http-api';
import { NestPinoLogger, type Logger } from '@cdp/logger';
import { CdpModule } from './cdp.module.js';

/** Builds and starts the all-in-one application (not yet listening); main and the end-to-end tests share it. */
export async function createCdpApp(config: AppConfig, logger: Logger): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    CdpModule.forRoot(config, logger),
    new FastifyAdapter(fastifyOptions(config, logger)),
    { logger: new NestPinoLogger(logger), abortOnError: false },
  );
  const fastify = app.getHttpAdapter().getInstance();
  installHttpHooks(fastify);
  const openapi = buildOpenApi(app);
  fastify.get('/openapi.json', (_request, reply) => reply.send(openapi));
  app.connectMicroservice({ strategy: new BusTransport(app.get(EventBus)) }, { inheritAppConfig: true });
  await app.init();
  // Fastify compiles its hooks into the routes when ready; tests use the server without listen().
  await fastify.ready();
  await app.startAllMicroservices();
  return app;
}
