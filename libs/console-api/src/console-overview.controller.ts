import { Controller, Get, Query, Req, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { EventBus } from '@cdp/bus';
import { ApiError, type DriverHealth } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { ConsoleSessionGuard, type ConsoleRequest } from './console-session.guard.js';
import {
  ConsoleStoreReads,
  type LagMinute,
  type MinuteCount,
  type ReasonCount,
  type RevenueDay,
  type Totals,
} from './reads/console-store-reads.js';

/** The overview's time ranges, in minutes. */
const RANGES = { hour: 60, day: 24 * 60 } as const;
/** The top rejection reasons listed. */
const TOP_REASONS = 10;
/** Revenue is drawn for this many days. */
const REVENUE_DAYS = 30;

export interface OverviewView {
  range: keyof typeof RANGES;
  /** Events per minute and type, by the minute the API accepted them (202). */
  events: MinuteCount[];
  /** Records refused before the 202, per minute and type (RejectionTap's counts, summed by the store). */
  rejected: MinuteCount[];
  /** The most frequent reasons records were refused (or fields dropped) in the range. */
  reasons: ReasonCount[];
  /** 202 → committed to the store, per minute of acceptance. */
  lag: LagMinute[];
  totals: Totals;
  revenue_by_day: RevenueDay[];
  /** The bus's own account of what waits to be processed (every account's: the bus is shared). */
  backlog: DriverHealth;
}

/**
 * The console's overview: aggregates the store computes for the session's account, read only when the
 * page asks (it asks again while open; nothing runs while no page is open).
 */
@ApiExcludeController()
@Auth('none')
@UseGuards(ConsoleSessionGuard)
@Controller('console/api/overview')
export class ConsoleOverviewController {
  constructor(
    private readonly reads: ConsoleStoreReads,
    private readonly bus: EventBus,
  ) {}

  @Get()
  async overview(@Req() request: ConsoleRequest, @Query('range') range = 'hour'): Promise<OverviewView> {
    if (range !== 'hour' && range !== 'day') {
      throw ApiError.invalid([{ field: 'range', reason: 'must be hour or day' }]);
    }
    const account = request.consoleSession!.account.id;
    const minutes = RANGES[range];
    const [events, rejected, reasons, lag, totals, revenue, backlog] = await Promise.all([
      this.reads.eventsPerMinute(account, minutes),
      this.reads.rejectionsPerMinute(account, minutes),
      this.reads.topRejectionReasons(account, minutes, TOP_REASONS),
      this.reads.ingestLag(account, minutes),
      this.reads.totals(account),
      this.reads.revenueByDay(account, REVENUE_DAYS),
      this.bus.health(),
    ]);
    return { range, events, rejected, reasons, lag, totals, revenue_by_day: revenue, backlog };
  }
}
