import { ApiError, type Invalid } from '@cdp/contracts';
import type { CustomFieldType } from '@cdp/domain';
import type { AccountSchema } from './account-schema.js';
import { RESERVED_FIELD_NAMES, RESERVED_OBJECT_NAMES, customObjectTable } from './builtin-objects.js';
import { displayKey } from './naming.rules.js';
import {
  sameValueKind,
  type FieldDef,
  type JoinField,
  type ObjectDef,
  type RelationDef,
} from './schema.model.js';

/*
 * The schema API's rules that need the account's current schema: names, aliases and display names
 * already used, reserved names, the child object of a relation and its primary key. The shape of a
 * request (types, naming rules, lengths, a primary key among a new object's fields) is checked before,
 * by the API's DTOs (libs/http-api/src/schema/schema.dto.ts); these run inside the registry's
 * compare-and-set loop, against the schema the change is written on.
 */

/** A field as the DTOs let it through. `primary_key` is accepted for `primary`. */
export interface NewField {
  name: string;
  type: CustomFieldType;
  display_name: string;
  description?: string | null;
  primary?: boolean | null;
  primary_key?: boolean | null;
}

/** A join pair; the spec's parameter table names it source/target, its example parent/child. */
export interface NewJoinField {
  parent?: string;
  child?: string;
  source?: string;
  target?: string;
}

export interface NewRelation {
  name: string;
  display_name: string;
  child_object: string;
  join_fields: NewJoinField[];
}

export interface NewObject {
  name: string;
  display_name: string;
  alias?: string | null;
  fields: NewField[];
  relations?: NewRelation[] | null;
}

/** `POST .../fields`: one field, or `{fields: [...]}` (the spec's examples show both). */
export type NewFields = NewField | { fields: NewField[] };

/** Reason of every duplicate name (spec/NOTES.md: the Node client recognises `already used`). */
const alreadyUsed = (what: string) => `already used by ${what}`;

/** Whether a field is part of the key: `primary`, or `primary_key` as some clients send it. */
export const isPrimary = (field: { primary?: unknown; primary_key?: unknown }): boolean =>
  (field.primary ?? field.primary_key) === true;

/** A new object (`POST /v3/schema/objects`), checked against the account's current schema. */
export function parseObject(input: NewObject, schema: AccountSchema): ObjectDef {
  const invalids: Invalid[] = [];
  const { name } = input;
  const owner = schema.object(name);
  if (owner) invalids.push({ field: 'name', reason: alreadyUsed(`object ${owner.name}`) });
  else if (RESERVED_OBJECT_NAMES.includes(name))
    invalids.push({ field: 'name', reason: alreadyUsed('the platform') });

  const key = displayKey(input.display_name);
  const displayOwner = schema.objects().find((o) => displayKey(o.display_name) === key);
  if (displayOwner)
    invalids.push({ field: 'display_name', reason: alreadyUsed(`object ${displayOwner.name}`) });

  const alias = input.alias || undefined;
  if (alias === name) invalids.push({ field: 'alias', reason: alreadyUsed('the name') });
  else if (alias) {
    const aliasOwner = schema.object(alias);
    if (aliasOwner) invalids.push({ field: 'alias', reason: alreadyUsed(`object ${aliasOwner.name}`) });
  }

  const fields: FieldDef[] = [];
  input.fields.forEach((raw, i) => {
    const parsed = parseField(raw, `fields.${i}.`, [...fields], undefined);
    if (Array.isArray(parsed)) invalids.push(...parsed);
    else fields.push(parsed);
  });

  const object: ObjectDef = {
    name,
    display_name: input.display_name.trim(),
    ...(alias ? { alias } : {}),
    fields,
    relations: [],
    created_by: 'account',
    table: customObjectTable(name),
  };
  (input.relations ?? []).forEach((raw, i) => {
    const parsed = parseRelationIn(raw, `relations.${i}.`, object, schema);
    if (Array.isArray(parsed)) invalids.push(...parsed);
    else object.relations.push(parsed);
  });
  if (invalids.length) throw ApiError.invalid(invalids);
  return object;
}

/** New fields of an existing object (`POST .../fields`); all or none are created. */
export function parseNewFields(body: NewFields, object: ObjectDef): { fields: FieldDef[]; many: boolean } {
  const many = 'fields' in body;
  const raws = many ? body.fields : [body];
  const invalids: Invalid[] = [];
  const fields: FieldDef[] = [];
  raws.forEach((raw, i) => {
    const parsed = parseField(raw, many ? `fields.${i}.` : '', [...object.fields, ...fields], object);
    if (Array.isArray(parsed)) invalids.push(...parsed);
    else fields.push(parsed);
  });
  if (invalids.length) throw ApiError.invalid(invalids);
  return { fields, many };
}

/** A field of a new object (`object` undefined) or of an existing one, unique among `existing`. */
function parseField(
  raw: NewField,
  prefix: string,
  existing: readonly FieldDef[],
  object: ObjectDef | undefined,
): FieldDef | Invalid[] {
  const invalids: Invalid[] = [];
  const { name } = raw;
  if (existing.some((f) => f.name === name))
    invalids.push({
      field: `${prefix}name`,
      reason: alreadyUsed(`a field of ${object?.name ?? 'the object'}`),
    });
  else if (object && isReservedField(object.name, name))
    invalids.push({ field: `${prefix}name`, reason: alreadyUsed(`the platform in ${object.name}`) });
  const key = displayKey(raw.display_name);
  const owner = existing.find((f) => displayKey(f.display_name) === key);
  if (owner) invalids.push({ field: `${prefix}display_name`, reason: alreadyUsed(`field ${owner.name}`) });
  const primary = isPrimary(raw);
  if (primary && object)
    // Spec "Schema resources": the primary-key flag is only allowed when the object is created.
    invalids.push({
      // Named as the caller sent it: `primary`, or `primary_key` (isPrimary reads `primary` first).
      field: `${prefix}${raw.primary != null ? 'primary' : 'primary_key'}`,
      reason: 'a primary key can only be set when the object is created',
    });
  if (invalids.length) return invalids;
  return {
    name,
    display_name: raw.display_name.trim(),
    type: raw.type,
    description: raw.description ?? '',
    primary,
    auto: false,
    created_by: 'account',
  };
}

function isReservedField(object: string, name: string): boolean {
  if ((RESERVED_FIELD_NAMES[object] ?? []).includes(name)) return true;
  // Identifier fields of customers are not attributes (spec "Identifiers"); svc_ names are the platform's.
  if (object === 'customers') return /_push_tokens$/.test(name) || name.startsWith('svc_');
  return false;
}

/** A new relation of an existing object (`POST .../relations`). */
export function parseNewRelation(input: NewRelation, object: ObjectDef, schema: AccountSchema): RelationDef {
  const parsed = parseRelationIn(input, '', object, schema);
  if (Array.isArray(parsed)) throw ApiError.invalid(parsed);
  return parsed;
}

/**
 * A relation of `object` (the parent): a unique name that is no field's, an existing child object, and
 * join fields from parent fields to the child's whole primary key, of matching types.
 */
function parseRelationIn(
  raw: NewRelation,
  prefix: string,
  object: ObjectDef,
  schema: AccountSchema,
): RelationDef | Invalid[] {
  const invalids: Invalid[] = [];
  const { name } = raw;
  if (object.relations.some((r) => r.name === name))
    invalids.push({ field: `${prefix}name`, reason: alreadyUsed(`a relation of ${object.name}`) });
  else if (object.fields.some((f) => f.name === name))
    // Export selects address both as `<name>.…` / `<name>`: one name cannot mean both.
    invalids.push({ field: `${prefix}name`, reason: alreadyUsed(`a field of ${object.name}`) });
  if (object.relations.some((r) => displayKey(r.display_name) === displayKey(raw.display_name)))
    invalids.push({ field: `${prefix}display_name`, reason: alreadyUsed(`a relation of ${object.name}`) });

  const childName = raw.child_object;
  const child = childName === object.name || childName === object.alias ? object : schema.object(childName);
  if (!child)
    invalids.push({ field: `${prefix}child_object`, reason: `unable to locate object ${childName}` });

  const joins: JoinField[] = [];
  raw.join_fields.forEach((pair, i) => {
    const at = `${prefix}join_fields.${i}`;
    const p = (pair.parent ?? pair.source)!;
    const c = (pair.child ?? pair.target)!;
    const parentField = object.fields.find((f) => f.name === p);
    if (!parentField)
      invalids.push({ field: `${at}.parent`, reason: `unable to locate field ${object.name}.${p}` });
    if (!child) return;
    const childField = child.fields.find((f) => f.name === c);
    if (!childField || !childField.primary) {
      invalids.push({
        field: `${at}.child`,
        reason: `${child.name}.${c} is not a primary-key field of ${child.name}`,
      });
      return;
    }
    if (parentField && !sameValueKind(parentField.type, childField.type))
      invalids.push({
        field: `${at}.parent`,
        reason: `type of ${object.name}.${p} (${parentField.type}) does not match ${child.name}.${c} (${childField.type})`,
      });
    joins.push({ parent: p, child: c });
  });
  if (child && invalids.length === 0) {
    const keys = child.fields.filter((f) => f.primary).map((f) => f.name);
    const missing = keys.filter((k) => !joins.some((j) => j.child === k));
    if (missing.length)
      invalids.push({
        field: `${prefix}join_fields`,
        reason: `must join every primary-key field of ${child.name}; missing ${missing.join(', ')}`,
      });
  }
  if (invalids.length) return invalids;
  return {
    name,
    display_name: raw.display_name.trim(),
    child_object: child!.name,
    join_fields: joins,
    created_by: 'account',
  };
}
