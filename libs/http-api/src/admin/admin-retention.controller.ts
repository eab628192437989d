import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { ApiError } from '@cdp/contracts';
import { AccountsService, MAX_RETENTION_DAYS } from '@cdp/accounts';
import { Auth } from '@cdp/http-common';

interface RetentionView {
  /** Days events (and their line items) are kept; `null`: forever, the default. */
  events_days: number | null;
}

const retentionSchema = {
  type: 'object',
  required: ['events_days'],
  properties: {
    events_days: {
      description: 'days events are kept (older ones are removed by the store), or null to keep them forever',
      nullable: true,
      type: 'integer',
      minimum: 1,
      maximum: MAX_RETENTION_DAYS,
    },
  },
  additionalProperties: false,
};

/**
 * An account's events retention (docs/operations.md "Retention"): the store removes events older than
 * this many days by a TTL on the events and line items tables, applied at the account's next write
 * (the store reads the setting at most once a minute per account).
 */
@ApiTags('admin')
@ApiBearerAuth()
@Auth('admin')
@Controller('admin/v1/accounts/:id/retention')
export class AdminRetentionController {
  constructor(private readonly accounts: AccountsService) {}

  @Get()
  async get(@Param('id') id: string): Promise<RetentionView> {
    return { events_days: (await this.accounts.get(id)).eventsRetentionDays ?? null };
  }

  @Put()
  @ApiBody({ schema: retentionSchema })
  async set(@Param('id') id: string, @Body() body: unknown): Promise<RetentionView> {
    const record =
      body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const unknown = Object.keys(record).filter((k) => k !== 'events_days');
    if (unknown.length > 0)
      throw ApiError.invalid(
        unknown.map((field) => ({ field, reason: 'is not a retention setting (events_days)' })),
      );
    const days = record.events_days;
    if (days === undefined || (days !== null && typeof days !== 'number'))
      throw ApiError.invalid([
        {
          field: 'events_days',
          reason: `must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null (forever)`,
        },
      ]);
    const account = await this.accounts.setEventsRetention(id, days);
    return { events_days: account.eventsRetentionDays ?? null };
  }
}
