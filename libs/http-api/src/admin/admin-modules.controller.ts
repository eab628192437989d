import { Body, Controller, Get, Param, Patch } from '@nestjs/common';
import { ApiBearerAuth, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { AccountsService } from '@cdp/accounts';
import { AccountModules, SCHEMA_MODULE_NAMES, type ModuleState, type SchemaModuleName } from '@cdp/schema';
import { Auth } from '@cdp/http-common';
import { EnvelopeValidationPipe } from '../validation/envelope-validation.pipe.js';

const MODULE_STATES: ModuleState[] = ['enabled', 'available', 'unavailable'];
const STATE_REASON = `must be one of ${MODULE_STATES.join(', ')}`;

/** Module → state; the modules not named keep theirs. */
export class ModulesPatchDto {
  @ApiPropertyOptional({
    enum: MODULE_STATES,
    description:
      'enabled; available (in the package, the account enables it); unavailable (not in the package)',
  })
  @IsOptional()
  @IsIn(MODULE_STATES, { message: STATE_REASON })
  custom_objects?: ModuleState;
}

const ModulesValidation = new EnvelopeValidationPipe({
  unknownFieldReason: `is not a module (${SCHEMA_MODULE_NAMES.join(', ')})`,
});

/**
 * An account's package (spec "Custom objects and fields": custom objects exist "only in certain
 * packages"): the operator sets which schema modules an account has. Changes reach every API replica
 * within 2 seconds.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Auth('admin')
@Controller('admin/v1/accounts/:id/modules')
export class AdminModulesController {
  constructor(
    private readonly accounts: AccountsService,
    private readonly modules: AccountModules,
  ) {}

  @Get()
  async get(@Param('id') id: string): Promise<{ modules: Record<SchemaModuleName, ModuleState> }> {
    await this.accounts.get(id); // 404 for an unknown account
    return { modules: await this.modules.states(id, true) };
  }

  @Patch()
  async change(
    @Param('id') id: string,
    @Body(ModulesValidation) body: ModulesPatchDto,
  ): Promise<{ modules: Record<SchemaModuleName, ModuleState> }> {
    await this.accounts.get(id);
    return { modules: await this.modules.change(id, { ...body }) };
  }
}
