import { Body, Controller, Get, HttpCode, Post, UsePipes } from '@nestjs/common';
import { ApiHeader, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Principal } from '@cdp/accounts';
import type { CustomIdentifier } from '@cdp/domain';
import { Auth } from '@cdp/http-common';
import { SchemaRegistry, fieldView, type FieldView } from '@cdp/schema';
import { CurrentPrincipal } from '../auth/principal.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { CustomIdentifierDto } from './custom-identifiers.dto.js';

/**
 * Custom identifiers (not in the spec; the original API's clients call it): a new kind of identifier
 * resolving customers like email does, with a text field of its own on customers and events.
 */
@ApiTags('schema')
@ApiHeader({ name: 'x-api-key', description: 'private key', required: true })
@UsePipes(EnvelopeValidation)
@Controller('v3/schema/identifiers')
@Auth('private')
export class CustomIdentifiersController {
  constructor(private readonly registry: SchemaRegistry) {}

  @Post()
  @HttpCode(201)
  @ApiResponse({ status: 201, description: '{events: [field], customers: [field]}: the fields it added' })
  @ApiResponse({ status: 400, description: 'invalid, or already used (field customers.name)' })
  async create(
    @Body() body: CustomIdentifierDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ events: FieldView[]; customers: FieldView[] }> {
    const created = await this.registry.createIdentifier(principal.account, {
      name: body.name,
      display_name: body.display_name,
      merge_confidence: body.merge_confidence,
      messaging: body.messaging ?? false,
    });
    return { events: created.events.map(fieldView), customers: created.customers.map(fieldView) };
  }

  @Get()
  @ApiResponse({
    status: 200,
    description: '{identifiers: [{name, display_name, merge_confidence, messaging}]}',
  })
  async list(
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ identifiers: readonly CustomIdentifier[] }> {
    return { identifiers: (await this.registry.read(principal.account, true)).customIdentifiers() };
  }
}
