import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Principal } from '@cdp/accounts';
import { Auth } from '@cdp/http-common';
import { SegmentsService, type Segment, type SegmentInput, type SegmentSize } from '@cdp/segments';
import { CurrentPrincipal } from '../auth/principal.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';
import { NewSegmentDto, SegmentBodyDto, SegmentBodyPipe } from './segment.dto.js';

/**
 * Segments (audiences) of an account (docs/api-notes.md "Segments"): what `POST /v3/graphql` answers
 * `audiences` with. Private key only.
 */
@ApiTags('segments')
@ApiHeader({ name: 'x-api-key', required: true })
@RateLimit('lists')
@Auth('private')
@Controller('v3/segments')
export class SegmentsController {
  constructor(private readonly segments: SegmentsService) {}

  @Get()
  @ApiResponse({
    status: 200,
    description: '{segments: [{id, name, description, definition, created_at, updated_at}]}',
  })
  async all(@CurrentPrincipal() principal: Principal): Promise<{ segments: Segment[] }> {
    return { segments: await this.segments.all(principal.account) };
  }

  @Post()
  @HttpCode(201)
  @ApiBody({ type: NewSegmentDto })
  @ApiResponse({ status: 201, description: '{segment}' })
  async create(
    @Body(new SegmentBodyPipe(true)) body: SegmentInput & { id?: string },
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ segment: Segment }> {
    const { id, ...input } = body;
    return { segment: await this.segments.create(principal.account, id!, input) };
  }

  @Get(':id')
  async get(
    @Param('id') id: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ segment: Segment }> {
    return { segment: await this.segments.get(principal.account, id) };
  }

  @Get(':id/size')
  @ApiResponse({
    status: 200,
    description: '{segment_id, customers, as_of}: the customers the segment selects, counted at as_of',
  })
  size(@Param('id') id: string, @CurrentPrincipal() principal: Principal): Promise<SegmentSize> {
    return this.segments.size(principal.account, id);
  }

  @Put(':id')
  @ApiBody({ type: SegmentBodyDto })
  async replace(
    @Param('id') id: string,
    @Body(new SegmentBodyPipe(false)) input: SegmentInput,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ segment: Segment }> {
    return { segment: await this.segments.replace(principal.account, id, input) };
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Param('id') id: string, @CurrentPrincipal() principal: Principal): Promise<void> {
    await this.segments.remove(principal.account, id);
  }
}
