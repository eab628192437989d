import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { SdkAssets } from './sdk-assets.js';

/**
 * The browser SDK at a versioned path (docs/sdk.md). Version 1 changes only compatibly, so a
 * page keeps its script tag; browsers and CDNs keep a copy for an hour and then revalidate it by ETag.
 * Any origin may load it, as a classic script or as an ES module (which needs CORS).
 */
@ApiTags('sdk')
@Controller('sdk/v1')
export class SdkController {
  constructor(private readonly assets: SdkAssets) {}

  @Get('svc.js')
  @Auth('none')
  @ApiOperation({ summary: 'the browser SDK for a script tag (global `svc`)' })
  @ApiProduces('application/javascript')
  @ApiResponse({ status: 200 })
  @ApiResponse({ status: 304, description: 'If-None-Match named the current ETag' })
  script(@Req() request: FastifyRequest, @Res() reply: FastifyReply): FastifyReply {
    return this.serve('svc.js', request, reply);
  }

  @Get('svc.js.map')
  @Auth('none')
  @ApiOperation({ summary: 'source map of svc.js' })
  scriptMap(@Req() request: FastifyRequest, @Res() reply: FastifyReply): FastifyReply {
    return this.serve('svc.js.map', request, reply);
  }

  @Get('svc.mjs')
  @Auth('none')
  @ApiOperation({ summary: 'the browser SDK as an ES module (`createTracker`)' })
  @ApiProduces('application/javascript')
  module(@Req() request: FastifyRequest, @Res() reply: FastifyReply): FastifyReply {
    return this.serve('svc.mjs', request, reply);
  }

  @Get('svc.mjs.map')
  @Auth('none')
  @ApiOperation({ summary: 'source map of svc.mjs' })
  moduleMap(@Req() request: FastifyRequest, @Res() reply: FastifyReply): FastifyReply {
    return this.serve('svc.mjs.map', request, reply);
  }

  private serve(file: string, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const asset = this.assets.get(file);
    if (!asset) throw ApiError.notFound(`the browser SDK is not built (npm run build): ${file}`);
    void reply.headers({
      etag: asset.etag,
      'access-control-allow-origin': '*',
      'cache-control': 'public, max-age=3600',
    });
    const match = request.headers['if-none-match'];
    if (match && match.split(',').some((tag) => tag.trim() === asset.etag)) return reply.status(304).send();
    return reply.type(asset.contentType).send(asset.body);
  }
}
