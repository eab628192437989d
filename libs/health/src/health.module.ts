import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ErrorEnvelopeFilter } from '@cdp/http-common';
import { HealthController } from './health.controller.js';
import { MetricsController } from './metrics.controller.js';

/** `GET /health` and `GET /metrics` alone, with the error envelope: what a process without the API serves (the processor). */
@Module({
  controllers: [HealthController, MetricsController],
  providers: [{ provide: APP_FILTER, useClass: ErrorEnvelopeFilter }],
})
export class HealthModule {}
