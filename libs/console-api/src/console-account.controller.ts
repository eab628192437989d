import { Body, Controller, Delete, Get, HttpCode, Param, Post, Req, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AccountsService, REVOKED_KEY_GRACE_MS, type Account } from '@cdp/accounts';
import { Buckets } from '@cdp/buckets';
import { ExportsService, exportPrefix, type ExportRecord } from '@cdp/exports';
import { Auth } from '@cdp/http-common';
import { ListsService, type List } from '@cdp/lists';
import { ActivityLog, type ActivityRecord } from '@cdp/loader';
import { SVC_ALL } from '@cdp/domain';
import { SubscriberCounts } from './subscriber-counts.js';
import {
  DEFAULT_RATES,
  RATE_LIMIT_FAMILIES,
  RateLimitPolicy,
  planName,
  type PlanSetting,
} from '@cdp/rate-limits';
import {
  SchemaRegistry,
  fieldView,
  objectView,
  requireObject,
  type FieldView,
  type NewFields,
  type ObjectView,
} from '@cdp/schema';
import { EnvelopeValidation, NewFieldsValidation, ObjectDefDto } from '@cdp/http-api/schema';
import { ConsoleSessionGuard, type ConsoleRequest } from './console-session.guard.js';

export interface KeyView {
  id: string;
  created_at: string;
  state: 'active' | 'revoked' | 'expired';
  revoked_at?: string;
  /** Revoked: when the key stops working (spec "Authentication" rule 5: 12 hours after). */
  expires_at?: string;
  grace_left_seconds?: number;
  /** The key this console session was opened with. */
  this_session: boolean;
}

export interface AccountPageView {
  name: string;
  public_key: string;
  created_at: string;
  keys: KeyView[];
}

export interface PlanView {
  family: string;
  plan: 'Default' | 'No Access' | 'Custom';
  /** What applies now: requests per second, "unlimited" or "no_access". */
  rate: PlanSetting;
  default_rate: PlanSetting;
}

/** Files the console's activity page shows: the newest ones; the API pages through the rest. */
const ACTIVITY_PAGE = 50;

/**
 * The account console's pages: keys, API plans, objects and fields, lists, exports. Every call is a
 * live session's (ConsoleSessionGuard) and touches only the session's account; changes go through the
 * same services as the admin and schema APIs.
 */
@ApiExcludeController()
@Auth('none')
@UseGuards(ConsoleSessionGuard)
@Controller('console/api')
export class ConsoleAccountController {
  constructor(
    private readonly accounts: AccountsService,
    private readonly policy: RateLimitPolicy,
    private readonly schema: SchemaRegistry,
    private readonly lists: ListsService,
    private readonly exports: ExportsService,
    private readonly activity: ActivityLog,
    private readonly subscribers: SubscriberCounts,
    private readonly buckets: Buckets,
  ) {}

  @Get('account')
  account(@Req() request: ConsoleRequest): AccountPageView {
    const { account, keyId } = request.consoleSession!;
    return accountView(account, keyId);
  }

  /** A new private key, shown once; the keys in use so far keep working for 12 hours. */
  @Post('keys')
  @HttpCode(201)
  async rotate(@Req() request: ConsoleRequest): Promise<{ private_key: string; account: AccountPageView }> {
    const { account, keyId } = request.consoleSession!;
    const rotated = await this.accounts.rotate(account.id);
    return { private_key: rotated.privateKey, account: accountView(rotated.account, keyId) };
  }

  @Delete('keys/:keyId')
  async revoke(@Req() request: ConsoleRequest, @Param('keyId') id: string): Promise<AccountPageView> {
    const { account, keyId } = request.consoleSession!;
    return accountView(await this.accounts.revoke(account.id, id), keyId);
  }

  /** The API plans, and how long the account's events are kept (both the operator's to change). */
  @Get('plans')
  async plans(
    @Req() request: ConsoleRequest,
  ): Promise<{ families: PlanView[]; events_retention_days: number | null }> {
    const { account } = request.consoleSession!;
    const overrides = await this.policy.overrides(account.id);
    const rates = this.policy.effective(overrides);
    return {
      events_retention_days: account.eventsRetentionDays ?? null,
      families: RATE_LIMIT_FAMILIES.map((family) => ({
        family,
        plan: planName(overrides[family]),
        rate: rates[family],
        default_rate: DEFAULT_RATES[family],
      })),
    };
  }

  @Get('objects')
  async objects(@Req() request: ConsoleRequest): Promise<ObjectView[]> {
    return (await this.schema.read(request.consoleSession!.account.id, true)).objects().map(objectView);
  }

  /** The schema API's own service: the same checks and answers as `POST /v3/schema/objects`. */
  @Post('objects')
  @HttpCode(201)
  async createObject(
    @Req() request: ConsoleRequest,
    @Body(EnvelopeValidation) body: ObjectDefDto,
  ): Promise<ObjectView> {
    const account = request.consoleSession!.account.id;
    const created = await this.schema.createObject(account, body);
    return objectView(requireObject(await this.schema.read(account, true), created.name));
  }

  @Post('objects/:object/fields')
  @HttpCode(201)
  async createField(
    @Req() request: ConsoleRequest,
    @Param('object') object: string,
    @Body(NewFieldsValidation) body: NewFields,
  ): Promise<FieldView[]> {
    const { fields } = await this.schema.createFields(request.consoleSession!.account.id, object, body);
    return fields.map(fieldView);
  }

  /** The lists with their current subscribers (`svc_all`: null, the global opt-in is not a list walk's). */
  @Get('lists')
  async allLists(@Req() request: ConsoleRequest): Promise<(List & { subscribers: number | null })[]> {
    const { account } = request.consoleSession!;
    const [lists, counts] = await Promise.all([
      this.lists.all(account.id, account.createdAt),
      this.subscribers.count(account.id),
    ]);
    return lists.map((l) => ({
      ...l,
      subscribers: l.list_id === SVC_ALL ? null : (counts.get(l.list_id) ?? 0),
    }));
  }

  /** The recent exports, each finished one with the files at its location (names under its path). */
  @Get('exports')
  async recentExports(@Req() request: ConsoleRequest): Promise<(ExportRecord & { files?: string[] })[]> {
    const { account } = request.consoleSession!;
    const records = await this.exports.recent(account.id);
    return Promise.all(
      records.map(async (record) => {
        if (record.state !== 'completed' && record.state !== 'completed_with_errors') return record;
        const prefix = exportPrefix(account.trackerId, record.id);
        const keys = await this.buckets.list('export', `${prefix}/`);
        return { ...record, files: keys.map((k) => k.slice(prefix.length + 1)).sort() };
      }),
    );
  }

  /** The bulk-file activity log's first page, as `GET /v3/activity` answers it. */
  @Get('activity')
  async activityLog(@Req() request: ConsoleRequest): Promise<{ activity: ActivityRecord[] }> {
    const { activity } = await this.activity.list(request.consoleSession!.account.id, ACTIVITY_PAGE);
    return { activity };
  }
}

function accountView(account: Account, sessionKey: string, now = Date.now()): AccountPageView {
  return {
    name: account.name,
    public_key: account.trackerId,
    created_at: account.createdAt,
    keys: account.keys.map((k): KeyView => {
      if (!k.revokedAt)
        return { id: k.id, created_at: k.createdAt, state: 'active', this_session: k.id === sessionKey };
      const ends = Date.parse(k.revokedAt) + REVOKED_KEY_GRACE_MS;
      return {
        id: k.id,
        created_at: k.createdAt,
        state: ends > now ? 'revoked' : 'expired',
        revoked_at: k.revokedAt,
        expires_at: new Date(ends).toISOString(),
        grace_left_seconds: Math.max(0, Math.floor((ends - now) / 1000)),
        this_session: k.id === sessionKey,
      };
    }),
  };
}
