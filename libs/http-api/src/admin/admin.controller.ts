import { Body, Controller, Delete, Get, HttpCode, Param, Post, UsePipes } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AccountsService, viewAccount, type AccountView } from '@cdp/accounts';
import { Auth } from '@cdp/http-common';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { CreateAccountDto } from './admin.dto.js';

/** The operator's API: accounts and their keys. Authorised by `Authorization: Bearer $CDP_ADMIN_TOKEN`. */
@ApiTags('admin')
@ApiBearerAuth()
@Auth('admin')
@UsePipes(EnvelopeValidation)
@Controller('admin/v1/accounts')
export class AdminController {
  constructor(private readonly accounts: AccountsService) {}

  @Post()
  @HttpCode(201)
  async create(
    @Body() body: CreateAccountDto | undefined,
  ): Promise<{ account: AccountView; public_key: string; private_key: string }> {
    const { account, privateKey } = await this.accounts.create({
      name: body?.name ?? undefined,
      trackerId: body?.tracker_id ?? undefined,
    });
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
