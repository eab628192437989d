import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ErrorEnvelopeFilter } from '../errors/error-envelope.filter.js';
import { HealthController } from './health.controller.js';

/** `GET /health` alone, with the error envelope: what a process without the API serves (the processor). */
@Module({
  controllers: [HealthController],
  providers: [{ provide: APP_FILTER, useClass: ErrorEnvelopeFilter }],
})
export class HealthModule {}
