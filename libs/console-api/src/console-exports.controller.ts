import { basename } from 'node:path';
import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Buckets } from '@cdp/buckets';
import { ApiError } from '@cdp/contracts';
import { ExportsService, exportPrefix, type ExportDetail, type ExportRecord } from '@cdp/exports';
import { Auth } from '@cdp/http-common';
import { SegmentsService } from '@cdp/segments';
import { ExportRequestValidation } from '@cdp/http-api/exports';
import { ConsoleSessionGuard, type ConsoleRequest } from './console-session.guard.js';
import { ConsoleSessions } from './console-sessions.service.js';
import { downloadSigned, signDownload } from './session-cookie.js';

/** How long a download link works: long enough to click, short enough that a copied link soon dies. */
export const DOWNLOAD_LINK_SECONDS = 300;
const DOWNLOAD_PATH = '/console/api/export-file';

export interface DownloadLink {
  url: string;
  expires_at: string;
}

/**
 * Starting an export from the console (the body pipe and service of `POST /v3/exports`: the same checks
 * and errors) and downloading a finished export's files through short-lived links: presigned by S3, or
 * signed by this server where the buckets are local directories.
 */
@ApiExcludeController()
@Auth('none')
@UseGuards(ConsoleSessionGuard)
@Controller('console/api/exports')
export class ConsoleExportsController {
  constructor(
    private readonly exports: ExportsService,
    private readonly segments: SegmentsService,
    private readonly buckets: Buckets,
    private readonly sessions: ConsoleSessions,
  ) {}

  @Post()
  @HttpCode(202)
  async start(
    @Req() request: ConsoleRequest,
    @Body(ExportRequestValidation) detail: ExportDetail,
  ): Promise<ExportRecord> {
    const { account } = request.consoleSession!;
    const members = await this.segments.exportMembers(account.id, detail);
    return this.exports.request(account.id, account.trackerId, detail, undefined, members);
  }

  /** A link to one file of a finished export of the session's account. */
  @Get(':id/link')
  async link(
    @Req() request: ConsoleRequest,
    @Param('id') id: string,
    @Query('file') file?: string,
  ): Promise<DownloadLink> {
    const { account } = request.consoleSession!;
    const record = await this.exports.get(account.id, id);
    const prefix = exportPrefix(account.trackerId, record.id);
    const key = `${prefix}/${file ?? ''}`;
    // Only a file the listing shows: a name cannot climb out of the export's own prefix.
    if (!file || !(await this.buckets.list('export', `${prefix}/`)).includes(key)) {
      throw ApiError.notFound(`export ${id} has no file ${file ?? ''}`);
    }
    const exp = Date.now() + DOWNLOAD_LINK_SECONDS * 1000;
    const presigned = await this.buckets.presignGet('export', key, DOWNLOAD_LINK_SECONDS);
    const url =
      presigned ??
      `${DOWNLOAD_PATH}?key=${encodeURIComponent(key)}&expires=${exp}` +
        `&signature=${signDownload(this.sessions.csrfSecret(), key, exp)}`;
    return { url, expires_at: new Date(exp).toISOString() };
  }
}

/** Serves a file of the export bucket to whoever holds a link this server signed, until it expires. */
@ApiExcludeController()
@Auth('none')
@Controller(DOWNLOAD_PATH.slice(1))
export class ConsoleExportFileController {
  constructor(
    private readonly buckets: Buckets,
    private readonly sessions: ConsoleSessions,
  ) {}

  @Get()
  async download(
    @Query('key') key: string | undefined,
    @Query('expires') expires: string | undefined,
    @Query('signature') signature: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    if (
      typeof key !== 'string' ||
      typeof signature !== 'string' ||
      !downloadSigned(this.sessions.csrfSecret(), key, Number(expires), signature)
    ) {
      throw ApiError.forbidden(
        'this download link is not valid or has expired: ask the console for a new one',
      );
    }
    const stat = await this.buckets.stat('export', key);
    if (!stat) throw ApiError.notFound('the file is gone');
    await reply
      .header('content-type', 'application/octet-stream')
      .header('content-length', String(stat.size))
      .header('content-disposition', `attachment; filename="${basename(key).replace(/[^\w.-]/g, '_')}"`)
      .send(this.buckets.read('export', key));
  }
}
