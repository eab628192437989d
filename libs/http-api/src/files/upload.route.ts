import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { Buckets } from '@cdp/buckets';
import { envelope, type ErrorDetail } from '@cdp/contracts';
import { nameProblem } from '@cdp/loader';
import { UploadSigner } from './upload-signer.js';

/** Largest file the API takes through its own upload URL (local directories; S3 takes the upload itself). */
const MAX_UPLOAD_BYTES = 5 * 1024 * 1024 * 1024;

/**
 * `PUT /v3/files/uploads/{tracker_id}/{name}?expires&signature`: the upload URL the API serves where the
 * buckets are local directories. The signature is the credential (no key); the body streams into the
 * incoming bucket under a temporary name and appears whole, so the loader never reads half a file.
 * Registered on Fastify directly: the body is a file, not JSON, and is streamed, never parsed.
 */
@Injectable()
export class UploadRoute implements OnModuleInit {
  constructor(
    private readonly adapter: HttpAdapterHost,
    private readonly buckets: Buckets,
    private readonly signer: UploadSigner,
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
    const { tracker, name } = request.params as { tracker: string; name: string };
    const { expires, signature } = request.query as { expires?: string; signature?: string };
    const fail = (status: number, detail: ErrorDetail) => reply.code(status).send(envelope(status, detail));
    const key = `${tracker}/${name}`;
    if (!this.signer.verify(key, Number(expires), String(signature ?? ''))) {
      return fail(403, { message: 'the upload URL is not valid or has expired; ask for a new one' });
    }
    const problem = nameProblem(name);
    if (problem) return fail(400, { invalids: [{ field: 'name', reason: problem }] });
    const body = request.body as Readable | undefined;
    await this.buckets.write('incoming', key, body ?? '');
    return reply.code(200).send({ name, size: Number(request.headers['content-length'] ?? 0) });
  }
}
