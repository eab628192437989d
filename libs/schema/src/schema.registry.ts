import { Injectable } from '@nestjs/common';
import { ApiError, type Invalid } from '@cdp/contracts';
import type { CustomIdentifier } from '@cdp/domain';
import { CachedRecords, MetadataCacheClock, MetadataStore } from '@cdp/metadata';
import { AccountSchema } from './account-schema.js';
import {
  EMPTY_SCHEMA_DOC,
  type AccountSchemaDoc,
  type FieldDef,
  type ObjectDef,
  type RelationDef,
} from './schema.model.js';
import {
  parseNewFields,
  parseNewRelation,
  parseObject,
  type NewFields,
  type NewObject,
  type NewRelation,
} from './schema.validation.js';

const BUCKET = 'schema';

/** The objects a custom identifier adds its field to. */
const IDENTIFIER_OBJECTS = ['customers', 'events'] as const;

/**
 * How long a replica reuses an account's schema without reading the metadata store: a field created
 * through another replica is honoured by this one within this time (README "API notes").
 */
export const SCHEMA_CACHE_MS = 2_000;

/**
 * Every account's schema, kept as one metadata record per account. A change reads the record, checks
 * the request against it and writes it back with compare-and-set (the first with create-if-absent):
 * of two replicas creating the same name at once, the second write fails, is re-read and re-checked,
 * and is refused as `already used`. Readers (the API's validators, the processor's column keeper)
 * get a cached copy.
 */
@Injectable()
export class SchemaRegistry {
  private readonly records: CachedRecords<AccountSchemaDoc, AccountSchema>;

  constructor(metadata: MetadataStore, @MetadataCacheClock() now?: () => number) {
    this.records = new CachedRecords(metadata, BUCKET, {
      ttlMs: SCHEMA_CACHE_MS,
      view: (found) =>
        new AccountSchema(found?.value ?? structuredClone(EMPTY_SCHEMA_DOC), found?.revision ?? 0),
      now,
    });
  }

  /** The account's schema, at most SCHEMA_CACHE_MS old, or read now with `fresh`. */
  async read(account: string, fresh = false): Promise<AccountSchema> {
    let schema: AccountSchema;
    try {
      schema = await this.records.cached(account, fresh);
    } catch (err) {
      throw ApiError.unavailable(
        `the schema cannot be read right now: ${err instanceof Error ? err.message : String(err)}`,
        1,
      );
    }
    // A read that started before this replica's own write answers with the newer copy the write left.
    const current = this.records.peek(account);
    return current && current.revision > schema.revision ? current : schema;
  }

  async createObject(account: string, body: NewObject): Promise<ObjectDef> {
    return this.change(account, (schema, doc) => {
      const object = parseObject(body, schema);
      doc.objects.push(object);
      return object;
    });
  }

  async createFields(
    account: string,
    objectName: string,
    body: NewFields,
  ): Promise<{ object: string; fields: FieldDef[]; many: boolean }> {
    return this.change(account, (schema, doc) => {
      const object = requireObject(schema, objectName);
      const { fields, many } = parseNewFields(body, object);
      target(doc, object).fields.push(...fields);
      return { object: object.name, fields, many };
    });
  }

  async createRelation(account: string, objectName: string, body: NewRelation): Promise<RelationDef> {
    return this.change(account, (schema, doc) => {
      const object = requireObject(schema, objectName);
      const relation = parseNewRelation(body, object, schema);
      target(doc, object).relations.push(relation);
      return relation;
    });
  }

  /**
   * A custom identifier: a text field of customers and one of events, both named after it, and the
   * identifier itself. Its name and display name must be free on both objects (all or nothing); a
   * clash is reported on the object's field (`customers.name`), as the original API's clients expect.
   */
  async createIdentifier(
    account: string,
    identifier: CustomIdentifier,
  ): Promise<{ customers: FieldDef[]; events: FieldDef[] }> {
    return this.change(account, (schema, doc) => {
      const invalids: Invalid[] = [];
      const created: Record<string, FieldDef[]> = {};
      for (const objectName of IDENTIFIER_OBJECTS) {
        const object = requireObject(schema, objectName);
        const field = {
          name: identifier.name,
          display_name: identifier.display_name,
          type: 'string' as const,
          description: `custom identifier (${identifier.merge_confidence} merge confidence)`,
        };
        try {
          created[objectName] = parseNewFields(field, object).fields;
        } catch (err) {
          if (!(err instanceof ApiError) || !('invalids' in err.detail)) throw err;
          for (const i of err.detail.invalids)
            invalids.push({ ...i, field: `${objectName}.${String(i.field)}` });
        }
      }
      if (invalids.length) throw ApiError.invalid(invalids);
      for (const objectName of IDENTIFIER_OBJECTS)
        target(doc, requireObject(schema, objectName)).fields.push(...created[objectName]!);
      (doc.identifiers ??= []).push({ ...identifier, display_name: identifier.display_name.trim() });
      return { customers: created.customers!, events: created.events! };
    });
  }

  private async change<T>(
    account: string,
    apply: (schema: AccountSchema, doc: AccountSchemaDoc) => T,
  ): Promise<T> {
    // Someone else changing the schema since it was read has the request checked again on theirs.
    let result!: T;
    await this.records.update(account, (found) => {
      const doc = found?.value ?? structuredClone(EMPTY_SCHEMA_DOC);
      result = apply(new AccountSchema(structuredClone(doc), found?.revision ?? 0), doc);
      return doc;
    });
    return result;
  }
}

export function requireObject(schema: AccountSchema, name: string): ObjectDef {
  const object = schema.object(name);
  if (!object) throw ApiError.notFound(`unable to locate object ${name}`);
  return object;
}

/** Where an addition to an object is kept: in the account's object, or as an extension of a built-in one. */
function target(doc: AccountSchemaDoc, object: ObjectDef): { fields: FieldDef[]; relations: RelationDef[] } {
  if (object.created_by === 'account') return doc.objects.find((o) => o.name === object.name)!;
  return (doc.extensions[object.name] ??= { fields: [], relations: [] });
}
