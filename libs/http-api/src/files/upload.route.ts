import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { Buckets } from '@cdp/buckets';
import { ApiError } from '@cdp/contracts';
import { sendError } from '@cdp/http-common';
import { nameProblem } from '@cdp/loader';
import { LOGGER, type Logger } from '@cdp/logger';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { UploadQueryDto } from './upload-query.dto.js';
import { UploadSigner } from './upload-signer.js';

/** Largest file the API takes through its own upload URL (local directories; S3 takes the upload itself). */
const MAX_UPLOAD_BYTES = 5 * 1024 * 1024 * 1024;

/**
 * `PUT /v3/files/uploads/{tracker_id}/{name}?expires&signature`: the upload URL the API serves where the
 * buckets are local directories. The signature is the credential (no key); the body streams into the
 * incoming bucket under a temporary name and appears whole, so the loader never reads half a file.
 * Registered on Fastify directly: the body is a file, not JSON, and is streamed, never parsed. The query
 * goes through the control plane's ValidationPipe all the same (UploadQueryDto), and every refusal is
 * answered in the spec's envelope by the same function as the exception filter's.
 */
@Injectable()
export class UploadRoute implements OnModuleInit {
  constructor(
    private readonly adapter: HttpAdapterHost,
    private readonly buckets: Buckets,
    private readonly signer: UploadSigner,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    void fastify.register((scope, _opts, done) => {
      scope.addContentTypeParser('*', (_request, payload, parsed) => parsed(null, payload));
      scope.put(
        '/v3/files/uploads/:tracker/:name',
        { bodyLimit: MAX_UPLOAD_BYTES, config: { rawUpload: true } },
        (request, reply) => this.upload(request, reply),
      );
      done();
    });
  }

  private async upload(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    try {
      const { tracker, name } = request.params as { tracker: string; name: string };
      const { expires, signature } = (await EnvelopeValidation.transform(request.query, {
        type: 'query',
        metatype: UploadQueryDto,
      })) as UploadQueryDto;
      const key = `${tracker}/${name}`;
      if (!this.signer.verify(key, Number(expires), signature)) {
        throw ApiError.forbidden('the upload URL is not valid or has expired; ask for a new one');
      }
      const problem = nameProblem(name);
      if (problem) throw ApiError.invalid([{ field: 'name', reason: problem }]);
      const body = request.body as Readable | undefined;
      await this.buckets.write('incoming', key, body ?? '');
      return reply.code(200).send({ name, size: Number(request.headers['content-length'] ?? 0) });
    } catch (err) {
      sendError(reply, request, err, this.logger);
      return reply;
    }
  }
}
