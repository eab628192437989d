import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { BusUnavailableError, EventBus, type DeadLetter } from '@cdp/bus';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';

interface DeadLetterView {
  id: string;
  account: string;
  kind: string;
  message_id: string;
  records: number;
  reason: string;
  first_failed_at: string;
  dead_lettered_at: string;
  deliveries: number;
}

const MAX_PAGE = 1000;

/**
 * Messages the processor gave up on (a deterministic failure, or one that kept failing while the rest
 * was stored): list them, and replay them once the cause is fixed. A replay publishes the message to
 * the ingest bus again and then removes the dead letter; processing is idempotent per message, so
 * replaying twice stores it once.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Auth('admin')
@Controller('admin/v1/dead-letters')
export class AdminDeadLettersController {
  constructor(private readonly bus: EventBus) {}

  @Get()
  @ApiQuery({ name: 'account', required: false, description: 'only this account' })
  @ApiQuery({ name: 'after', required: false, description: 'the `next` of the previous page' })
  @ApiQuery({ name: 'limit', required: false, description: `page size, 1–${MAX_PAGE} (default 100)` })
  async list(
    @Query('account') account?: string,
    @Query('after') after?: string,
    @Query('limit') limit?: string,
  ): Promise<{ dead_letters: DeadLetterView[]; next?: string }> {
    const size = limit === undefined ? 100 : Number(limit);
    if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE) {
      throw ApiError.invalid([{ field: 'limit', reason: `must be a whole number from 1 to ${MAX_PAGE}` }]);
    }
    if (after !== undefined && !/^\d+$/.test(after)) {
      throw ApiError.invalid([{ field: 'after', reason: 'must be the `next` of a previous page' }]);
    }
    const page = await this.bus.deadLetters({
      ...(account ? { account } : {}),
      ...(after !== undefined ? { after } : {}),
      limit: size,
    });
    return { dead_letters: page.items.map(view), ...(page.next ? { next: page.next } : {}) };
  }

  /** Replays every dead letter of one account. */
  @Post('replay')
  @HttpCode(200)
  @ApiQuery({ name: 'account', required: true })
  async replayAccount(@Query('account') account?: string): Promise<{ replayed: number }> {
    if (!account) throw ApiError.invalid([{ field: 'account', reason: 'is required' }]);
    return { replayed: await republish(() => this.bus.replayDeadLetters(account)) };
  }

  @Post(':id/replay')
  @HttpCode(200)
  async replay(@Param('id') id: string): Promise<{ replayed: number }> {
    if (!/^\d+$/.test(id) || !(await republish(() => this.bus.replayDeadLetter(id)))) {
      throw ApiError.notFound(`no dead letter ${id}`);
    }
    return { replayed: 1 };
  }
}

/** A bus that cannot take the message now is a 503 with Retry-After, as for ingestion. */
async function republish<T>(replay: () => Promise<T>): Promise<T> {
  try {
    return await replay();
  } catch (err) {
    if (err instanceof BusUnavailableError) {
      throw ApiError.unavailable(`not replayed: ${err.message}`, err.retryAfterSeconds);
    }
    throw err;
  }
}

function view(d: DeadLetter): DeadLetterView {
  return {
    id: d.id,
    account: d.account,
    kind: d.kind,
    message_id: d.messageId,
    records: d.records,
    reason: d.reason,
    first_failed_at: d.firstFailedAt,
    dead_lettered_at: d.deadLetteredAt,
    deliveries: d.deliveries,
  };
}
