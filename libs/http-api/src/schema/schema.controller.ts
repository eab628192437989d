import { Body, Controller, Get, HttpCode, Param, Post, UsePipes } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiHeader, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Principal } from '@cdp/accounts';
import { ApiError } from '@cdp/contracts';
import {
  SchemaRegistry,
  fieldView,
  objectView,
  relationView,
  requireObject,
  type FieldView,
  type ObjectView,
  type NewFields,
  type RelationView,
} from '@cdp/schema';
import { Auth } from '@cdp/http-common';
import { CurrentPrincipal } from '../auth/principal.js';
import {
  FieldDefDto,
  NewFieldsDto,
  NewFieldsValidation,
  ObjectDefDto,
  RelationDefDto,
} from './schema.dto.js';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { RequiresModule } from './requires-module.js';
import { RateLimit } from '../rate-limits/rate-limit.decorator.js';

/**
 * The schema API (spec "Schema API (beta)"): objects, their fields and relations. Creation answers 201
 * with what was created (spec/NOTES.md "Responses"); reads come from the metadata store, never a cache,
 * so a replica shows what another one created a moment ago. Bodies are checked by their DTOs first
 * (shape, naming rules), then by the registry against the account's schema (names already used).
 */
@ApiTags('schema')
@ApiExtraModels(FieldDefDto, NewFieldsDto)
@ApiHeader({ name: 'x-api-key', description: 'private key', required: true })
@RateLimit('schema')
@Controller('v3/schema/objects')
@Auth('private')
@UsePipes(EnvelopeValidation)
export class SchemaController {
  constructor(private readonly registry: SchemaRegistry) {}

  @Post()
  @HttpCode(201)
  @RequiresModule('custom_objects')
  @ApiBody({ type: ObjectDefDto })
  @ApiResponse({ status: 201, description: 'the created object' })
  async createObject(
    @Body() body: ObjectDefDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<ObjectView> {
    const created = await this.registry.createObject(principal.account, body);
    const schema = await this.registry.read(principal.account);
    return objectView(requireObject(schema, created.name));
  }

  @Get()
  async listObjects(@CurrentPrincipal() principal: Principal): Promise<ObjectView[]> {
    return (await this.registry.read(principal.account, true)).objects().map(objectView);
  }

  @Get(':object')
  async getObject(
    @Param('object') name: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<ObjectView> {
    return objectView(requireObject(await this.registry.read(principal.account, true), name));
  }

  @Post(':object/fields')
  @HttpCode(201)
  @ApiBody({
    description: 'one field, or {fields: [...]}',
    schema: { oneOf: [{ $ref: getSchemaPath(FieldDefDto) }, { $ref: getSchemaPath(NewFieldsDto) }] },
  })
  @ApiResponse({ status: 201, description: 'the created field, or {fields: [...]} when several were sent' })
  async createFields(
    @Param('object') name: string,
    @Body(NewFieldsValidation) body: NewFields,
    @CurrentPrincipal() principal: Principal,
  ): Promise<FieldView | { fields: FieldView[] }> {
    const { fields, many } = await this.registry.createFields(principal.account, name, body);
    return many ? { fields: fields.map(fieldView) } : fieldView(fields[0]!);
  }

  @Get(':object/fields')
  async listFields(
    @Param('object') name: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<FieldView[]> {
    return requireObject(await this.registry.read(principal.account, true), name).fields.map(fieldView);
  }

  @Get(':object/fields/:field')
  async getField(
    @Param('object') name: string,
    @Param('field') field: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<FieldView> {
    const object = requireObject(await this.registry.read(principal.account, true), name);
    const found = object.fields.find((f) => f.name === field);
    if (!found) throw ApiError.notFound(`unable to locate field ${object.name}.${field}`);
    return fieldView(found);
  }

  @Post(':object/relations')
  @HttpCode(201)
  @ApiBody({ type: RelationDefDto })
  @ApiResponse({ status: 201, description: 'the created relation' })
  async createRelation(
    @Param('object') name: string,
    @Body() body: RelationDefDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<RelationView> {
    return relationView(await this.registry.createRelation(principal.account, name, body));
  }

  @Get(':object/relations')
  async listRelations(
    @Param('object') name: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<RelationView[]> {
    return requireObject(await this.registry.read(principal.account, true), name).relations.map(relationView);
  }

  @Get(':object/relations/:relation')
  async getRelation(
    @Param('object') name: string,
    @Param('relation') relation: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<RelationView> {
    const object = requireObject(await this.registry.read(principal.account, true), name);
    const found = object.relations.find((r) => r.name === relation);
    if (!found) throw ApiError.notFound(`unable to locate relation ${object.name}.${relation}`);
    return relationView(found);
  }
}
