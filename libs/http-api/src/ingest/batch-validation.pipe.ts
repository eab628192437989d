import {
  createParamDecorator,
  Injectable,
  mixin,
  type ExecutionContext,
  type PipeTransform,
  type Type,
} from '@nestjs/common';
import type { BatchValidator } from '@cdp/contracts';
import { SchemaRegistry } from '@cdp/schema';
import type { AuthedRequest } from '../auth/principal.js';

/** A batch request's body with what reading it needs: the account (its custom fields), the receipt time. */
export interface BatchRequest {
  body: unknown;
  account: string;
  receivedAt: number;
  /** The request's address when a public key sent it (events take it as their `ip`: client-ip.ts). */
  clientIp?: string;
}

/** The records of a batch, normalized, every one valid. */
export interface ValidatedBatch<Out> {
  records: Out[];
  receivedAt: number;
}

/**
 * The body of a batch ingestion route, with its account and time of receipt, for a
 * BatchValidationPipe: `@BatchBody(EventsBatch) batch: ValidatedBatch<EventRecord>`.
 */
export const BatchBody = createParamDecorator((_: unknown, ctx: ExecutionContext): BatchRequest => {
  const request = ctx.switchToHttp().getRequest<AuthedRequest>();
  if (!request.principal) throw new Error('route reached without authentication');
  return {
    body: request.body,
    account: request.principal.account,
    receivedAt: Date.now(),
    ...(request.principal.private ? {} : { clientIp: request.ip }),
  };
});

/**
 * The batch ingestion routes validate in a pipe, as the control plane does, but with their JSON
 * schema compiled once by ajv (BatchValidator) rather than class-validator, which costs ~25 µs per
 * record more at these rates. `context` gives the validator what it needs of the account (its
 * custom fields); the pipe answers every invalid record at once in the spec's envelope.
 */
export function BatchValidationPipe<In, Out, Ctx>(
  validator: BatchValidator<In, Out, Ctx>,
  context: (schema: SchemaRegistry, request: BatchRequest) => Ctx | Promise<Ctx>,
): Type<PipeTransform<BatchRequest, Promise<ValidatedBatch<Out>>>> {
  @Injectable()
  class BatchPipe implements PipeTransform<BatchRequest, Promise<ValidatedBatch<Out>>> {
    constructor(private readonly schema: SchemaRegistry) {}

    async transform(request: BatchRequest): Promise<ValidatedBatch<Out>> {
      const records = validator.parse(request.body, await context(this.schema, request));
      return { records, receivedAt: request.receivedAt };
    }
  }
  return mixin(BatchPipe);
}

/** Validators that need nothing of the account. */
export const noContext = (): undefined => undefined;
