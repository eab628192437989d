import { Body, Controller, HttpCode, Inject, Post, Req, UsePipes } from '@nestjs/common';
import { ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';
import { Buckets } from '@cdp/buckets';
import { APP_CONFIG, bucketNames, type AppConfig } from '@cdp/config';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { nameProblem } from '@cdp/loader';
import { CurrentPrincipal } from '../auth/principal.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { UploadSigner } from './upload-signer.js';
import { UploadUrlDto } from './upload-url.dto.js';

export interface UploadUrl {
  name: string;
  method: 'PUT';
  url: string;
  expires_at: string;
  /** Where the file lands: `<incoming bucket>/<tracker_id>/<name>`. */
  path: string;
}

/**
 * spec "Bulk file ingestion": files are uploaded to `{incoming_bucket}/<tracker_id>/` "using credentials
 * issued on request". The credential is a URL to PUT one named file into the account's own prefix until
 * it expires: presigned by S3, or signed by the API, which then serves it (UploadRoute).
 */
@ApiTags('files')
@ApiHeader({ name: 'x-api-key', description: 'private key', required: true })
@UsePipes(EnvelopeValidation)
@Controller('v3/files/uploads')
export class UploadsController {
  constructor(
    private readonly buckets: Buckets,
    private readonly signer: UploadSigner,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(200)
  @Auth('private')
  @ApiResponse({ status: 200, description: '`{name, method: PUT, url, expires_at, path}`' })
  @ApiResponse({ status: 400, description: 'the name is no bulk file name, or would leave the prefix' })
  async issue(
    @Body() body: UploadUrlDto,
    @Req() request: FastifyRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<UploadUrl> {
    const problem = nameProblem(body.name);
    if (problem) throw ApiError.invalid([{ field: 'name', reason: problem }]);
    const key = `${principal.trackerId}/${body.name}`;
    const { expiresSeconds } = this.config.uploads;
    const expiresAt = Math.floor(Date.now() / 1000) + expiresSeconds;
    const presigned = await this.buckets.presignPut('incoming', key, expiresSeconds);
    const base =
      this.config.uploads.publicUrl ?? `${request.protocol}://${request.headers.host ?? 'localhost'}`;
    const url =
      presigned ??
      `${base.replace(/\/$/, '')}/v3/files/uploads/${principal.trackerId}/${encodeURIComponent(body.name)}` +
        `?expires=${expiresAt}&signature=${this.signer.sign(key, expiresAt)}`;
    return {
      name: body.name,
      method: 'PUT',
      url,
      expires_at: new Date(expiresAt * 1000).toISOString(),
      path: `${bucketNames(this.config).incoming}/${key}`,
    };
  }
}
