import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { BusTransport, EventBus } from '@cdp/bus';
import type { AppConfig } from '@cdp/config';
import { buildOpenApi, fastifyOptions, installHttpHooks } from '@cdp/http-common';
import { NestPinoLogger, type Logger } from '@cdp/logger';
import { Metrics, observeHttp } from '@cdp/metrics';

export interface AppShape {
  /** Serve the OpenAPI document (processes with the API role). */
  openapi: boolean;
  /** Consume the bus with the processor's handlers (processes with the processor role). */
  consume: boolean;
}

/**
 * Builds and starts (not yet listening) a process from its root module: the Fastify HTTP server
 * with the shared hooks, and, for the processor role, the bus transport feeding its handlers.
 */
export async function createApp(
  module: DynamicModule,
  config: AppConfig,
  logger: Logger,
  shape: AppShape,
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    module,
    new FastifyAdapter(fastifyOptions(config, logger)),
    {
      logger: new NestPinoLogger(logger),
      abortOnError: false,
      // Bodies are JSON only, read by the one parser installHttpHooks registers.
      bodyParser: false,
    },
  );
  const fastify = app.getHttpAdapter().getInstance();
  installHttpHooks(fastify);
  const metrics = app.get(Metrics);
  observeHttp(fastify, metrics);
  const bus = app.get(EventBus);
  metrics.watchBus(() => bus.backlog());
  if (shape.openapi) {
    const document = buildOpenApi(app);
    fastify.get('/openapi.json', (_request, reply) => reply.send(document));
  }
  if (shape.consume)
    app.connectMicroservice({ strategy: new BusTransport(bus, metrics) }, { inheritAppConfig: true });
  await app.init();
  // Fastify compiles its hooks into the routes when ready; tests use the server without listen().
  await fastify.ready();
  if (shape.consume) await app.startAllMicroservices();
  return app;
}
