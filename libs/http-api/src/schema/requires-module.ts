import {
  applyDecorators,
  Injectable,
  SetMetadata,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccountModules, type SchemaModuleName } from '@cdp/schema';
import type { AuthedRequest } from '../auth/principal.js';

const MODULE_KEY = 'cdp:schema-module';

/** Refuses (403) the request while the account has not enabled the module. Runs after authentication. */
@Injectable()
export class ModuleGate implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly modules: AccountModules,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const module = this.reflector.get<SchemaModuleName | undefined>(MODULE_KEY, context.getHandler());
    const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
    if (module && principal) await this.modules.require(principal.account, module);
    return true;
  }
}

/** A route of an optional capability (a schema module): 403 while the account has not enabled it. */
export const RequiresModule = (module: SchemaModuleName) =>
  applyDecorators(SetMetadata(MODULE_KEY, module), UseGuards(ModuleGate));
