import { Body, Controller, Get, HttpCode, Post, UsePipes } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { IsString } from 'class-validator';
import type { Principal } from '@cdp/accounts';
import { AccountModules, SCHEMA_MODULE_NAMES, type SchemaModuleName } from '@cdp/schema';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal } from '../auth/principal.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';

/** `POST /v3/schema/modules`: the module to enable. */
export class EnableModuleDto {
  @ApiProperty({ enum: SCHEMA_MODULE_NAMES })
  @IsString({ message: 'is required and must be a string' })
  module!: string;
}

/**
 * The account's schema modules (the original API's `/v3/schema/modules`; not in the spec): which
 * optional capabilities are on. Enabling one twice is a 400 `already enabled`, as the Node SDK expects.
 */
@ApiTags('schema')
@ApiHeader({ name: 'x-api-key', description: 'private key', required: true })
@RateLimit('schema')
@UsePipes(EnvelopeValidation)
@Controller('v3/schema/modules')
@Auth('private')
export class SchemaModulesController {
  constructor(private readonly modules: AccountModules) {}

  @Get()
  @ApiResponse({ status: 200, description: '{enabled_modules: [...]}' })
  async list(@CurrentPrincipal() principal: Principal): Promise<{ enabled_modules: SchemaModuleName[] }> {
    return { enabled_modules: await this.modules.enabled(principal.account, true) };
  }

  @Post()
  @HttpCode(200)
  @ApiBody({ type: EnableModuleDto })
  @ApiResponse({ status: 200, description: '{enabled_modules: [...]}, the module among them' })
  @ApiResponse({ status: 400, description: 'unknown module, or already enabled' })
  @ApiResponse({ status: 403, description: "the module is not in the account's package" })
  async enable(
    @Body() body: EnableModuleDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ enabled_modules: SchemaModuleName[] }> {
    return { enabled_modules: await this.modules.enable(principal.account, body.module) };
  }
}
