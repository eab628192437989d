import {
  Controller,
  createParamDecorator,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Put,
  Req,
  UseGuards,
  type ExecutionContext,
} from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Auth } from '@cdp/http-common';
import { SegmentBodyPipe } from '@cdp/http-api/segments';
import { SegmentsService, type Segment, type SegmentInput } from '@cdp/segments';
import { ConsoleSessionGuard, type ConsoleRequest } from './console-session.guard.js';

/** The request's body, for the API's own segment pipe (the account comes from the session). */
const SegmentBody = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): unknown => ctx.switchToHttp().getRequest<{ body: unknown }>().body,
);

/** Segment sizes counted at a time for one page load. */
const SIZES_AT_ONCE = 4;

export interface SegmentsPageView {
  segments: (Segment & { size: { customers: number; as_of: string } | { unavailable: string } })[];
}

/**
 * The console's Segments page: the session's account's segments with their sizes, created, replaced and deleted through
 * `/v3/segments`'s own pipe (SegmentBodyPipe) and service, so the page is refused with the API's status,
 * message and invalids.
 */
@ApiExcludeController()
@Auth('none')
@UseGuards(ConsoleSessionGuard)
@Controller('console/api/segments')
export class ConsoleSegmentsController {
  constructor(private readonly segments: SegmentsService) {}

  /**
   * Every segment with its size now (`GET /v3/segments/{id}/size`'s SegmentsService.size: one counting
   * query per segment, SIZES_AT_ONCE at a time, so a page of 100 segments does not crowd the store that
   * also takes the ingest writes); a size that cannot be counted says why, and the list still shows.
   */
  @Get()
  async all(@Req() request: ConsoleRequest): Promise<SegmentsPageView> {
    const account = request.consoleSession!.account.id;
    const segments = await this.segments.all(account);
    const sizes: SegmentsPageView['segments'][number]['size'][] = [];
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < segments.length; i = next++) {
        sizes[i] = await this.segments.size(account, segments[i]!.id).then(
          ({ customers, as_of }) => ({ customers, as_of }),
          (err: unknown) => ({ unavailable: err instanceof Error ? err.message : String(err) }),
        );
      }
    };
    await Promise.all(Array.from({ length: SIZES_AT_ONCE }, worker));
    return { segments: segments.map((s, i) => ({ ...s, size: sizes[i]! })) };
  }

  @Post()
  @HttpCode(201)
  async create(
    @Req() request: ConsoleRequest,
    @SegmentBody(new SegmentBodyPipe(true)) body: SegmentInput & { id?: string },
  ): Promise<{ segment: Segment }> {
    const { id, ...input } = body;
    return { segment: await this.segments.create(request.consoleSession!.account.id, id!, input) };
  }

  @Put(':id')
  async replace(
    @Req() request: ConsoleRequest,
    @Param('id') id: string,
    @SegmentBody(new SegmentBodyPipe(false)) input: SegmentInput,
  ): Promise<{ segment: Segment }> {
    return { segment: await this.segments.replace(request.consoleSession!.account.id, id, input) };
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Req() request: ConsoleRequest, @Param('id') id: string): Promise<void> {
    await this.segments.remove(request.consoleSession!.account.id, id);
  }
}
