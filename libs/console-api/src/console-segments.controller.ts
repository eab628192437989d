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

export interface SegmentsPageView {
  segments: Segment[];
}

/**
 * The console's Segments page: the session's account's segments, created, replaced and deleted through
 * `/v3/segments`'s own pipe (SegmentBodyPipe) and service, so the page is refused with the API's status,
 * message and invalids.
 */
@ApiExcludeController()
@Auth('none')
@UseGuards(ConsoleSessionGuard)
@Controller('console/api/segments')
export class ConsoleSegmentsController {
  constructor(private readonly segments: SegmentsService) {}

  @Get()
  async all(@Req() request: ConsoleRequest): Promise<SegmentsPageView> {
    return { segments: await this.segments.all(request.consoleSession!.account.id) };
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
