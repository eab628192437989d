import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import { AccountsService, viewAccount, type AccountView } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';

interface CreateAccountBody {
  name?: unknown;
  tracker_id?: unknown;
}

/** The operator's API: accounts and their keys. Authorised by `Authorization: Bearer $CDP_ADMIN_TOKEN`. */
@ApiTags('admin')
@ApiBearerAuth()
@Auth('admin')
@Controller('admin/v1/accounts')
export class AdminController {
  constructor(private readonly accounts: AccountsService) {}

  @Post()
  @HttpCode(201)
  @ApiBody({
    schema: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        tracker_id: { type: 'string', description: 'defaults to a random id' },
      },
    },
  })
  async create(
    @Body() body: CreateAccountBody | undefined,
  ): Promise<{ account: AccountView; public_key: string; private_key: string }> {
    const name = optionalString(body?.name, 'name');
    const trackerId = optionalString(body?.tracker_id, 'tracker_id');
    const { account, privateKey } = await this.accounts.create({ name, trackerId });
    return { account: viewAccount(account), public_key: account.trackerId, private_key: privateKey };
  }

  @Get()
  async list(): Promise<{ accounts: AccountView[] }> {
    return { accounts: (await this.accounts.list()).map(viewAccount) };
  }

  @Get(':id')
  async get(@Param('id') id: string): Promise<AccountView> {
    return viewAccount(await this.accounts.get(id));
  }

  /** Issues a new private key; the previous ones keep working for 12 hours. */
  @Post(':id/keys')
  @HttpCode(201)
  async rotate(@Param('id') id: string): Promise<{ account: AccountView; private_key: string }> {
    const { account, privateKey } = await this.accounts.rotate(id);
    return { account: viewAccount(account), private_key: privateKey };
  }

  /** Revokes one private key; it keeps working for 12 hours (spec "Authentication" rule 5). */
  @Delete(':id/keys/:keyId')
  async revoke(@Param('id') id: string, @Param('keyId') keyId: string): Promise<AccountView> {
    return viewAccount(await this.accounts.revoke(id, keyId));
  }
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024) {
    throw ApiError.invalid([{ field, reason: 'must be a non-empty string of at most 1024 characters' }]);
  }
  return value;
}
