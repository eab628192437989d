import { Controller, Get, HttpCode, Param, Post, Query, UsePipes } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { BusUnavailableError, EventBus, type DeadLetter } from '@cdp/bus';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { DeadLettersQueryDto, ReplayAccountQueryDto } from './admin.dto.js';

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

/**
 * Messages the processor gave up on (a deterministic failure, or one that kept failing while the rest
 * was stored): list them, and replay them once the cause is fixed. A replay publishes the message to
 * the ingest bus again and then removes the dead letter; processing is idempotent per message, so
 * replaying twice stores it once.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Auth('admin')
@UsePipes(EnvelopeValidation)
@Controller('admin/v1/dead-letters')
export class AdminDeadLettersController {
  constructor(private readonly bus: EventBus) {}

  @Get()
  async list(
    @Query() { account, after, limit }: DeadLettersQueryDto,
  ): Promise<{ dead_letters: DeadLetterView[]; next?: string }> {
    const size = limit === undefined ? 100 : Number(limit);
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
  async replayAccount(@Query() { account }: ReplayAccountQueryDto): Promise<{ replayed: number }> {
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
