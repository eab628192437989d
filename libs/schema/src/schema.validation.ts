import { ApiError, type Invalid } from '@cdp/contracts';
import { CUSTOM_FIELD_TYPES, isCustomFieldType, type CustomFieldType } from '@cdp/domain';
import type { AccountSchema } from './account-schema.js';
import { RESERVED_FIELD_NAMES, RESERVED_OBJECT_NAMES, customObjectTable } from './builtin-objects.js';
import {
  MAX_DESCRIPTION_LENGTH,
  displayKey,
  displayNameProblem,
  isPlural,
  snakeCaseProblem,
} from './naming.rules.js';
import {
  sameValueKind,
  type FieldDef,
  type JoinField,
  type ObjectDef,
  type RelationDef,
} from './schema.model.js';

type Body = Record<string, unknown>;

const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reason of every duplicate name (spec/NOTES.md: the Node client recognises `already used`). */
const alreadyUsed = (what: string) => `already used by ${what}`;

/**
 * A new object (`POST /v3/schema/objects`), checked against the account's current schema: naming
 * rules, uniqueness of name, alias and display name, its fields, a primary key, and its relations.
 */
export function parseObject(body: unknown, schema: AccountSchema): ObjectDef {
  if (!isObject(body)) throw ApiError.invalid([{ field: 'body', reason: 'must be object' }]);
  const invalids: Invalid[] = [];
  const name = body.name;
  const nameProblem = snakeCaseProblem(name);
  if (nameProblem) invalids.push({ field: 'name', reason: nameProblem });
  else if (!isPlural(name as string)) invalids.push({ field: 'name', reason: 'must be plural (end in s)' });
  else {
    const owner = schema.object(name as string);
    if (owner) invalids.push({ field: 'name', reason: alreadyUsed(`object ${owner.name}`) });
    else if (RESERVED_OBJECT_NAMES.includes(name as string))
      invalids.push({ field: 'name', reason: alreadyUsed('the platform') });
  }

  const displayProblem = displayNameProblem(body.display_name);
  if (displayProblem) invalids.push({ field: 'display_name', reason: displayProblem });
  else {
    const key = displayKey(body.display_name as string);
    const owner = schema.objects().find((o) => displayKey(o.display_name) === key);
    if (owner) invalids.push({ field: 'display_name', reason: alreadyUsed(`object ${owner.name}`) });
  }

  let alias: string | undefined;
  if (body.alias !== undefined && body.alias !== null && body.alias !== '') {
    const aliasProblem = snakeCaseProblem(body.alias);
    if (aliasProblem) invalids.push({ field: 'alias', reason: aliasProblem });
    else if (isPlural(body.alias as string))
      invalids.push({ field: 'alias', reason: 'must be singular (the object name is the plural)' });
    else if (body.alias === name) invalids.push({ field: 'alias', reason: alreadyUsed('the name') });
    else {
      const owner = schema.object(body.alias as string);
      if (owner) invalids.push({ field: 'alias', reason: alreadyUsed(`object ${owner.name}`) });
      else alias = body.alias as string;
    }
  }

  const fields: FieldDef[] = [];
  if (!Array.isArray(body.fields) || body.fields.length === 0) {
    invalids.push({ field: 'fields', reason: 'must list the fields, at least one of them primary' });
  } else {
    body.fields.forEach((raw, i) => {
      const parsed = parseField(raw, `fields.${i}.`, [...fields], true, undefined);
      if (Array.isArray(parsed)) invalids.push(...parsed);
      else fields.push(parsed);
    });
    if (!body.fields.some((f) => isObject(f) && (f.primary === true || f.primary_key === true)))
      invalids.push({
        field: 'fields',
        reason: 'at least one field must be the primary key (primary: true)',
      });
  }

  const object: ObjectDef = {
    name: name as string,
    display_name: typeof body.display_name === 'string' ? body.display_name.trim() : '',
    ...(alias ? { alias } : {}),
    fields,
    relations: [],
    created_by: 'account',
    table: customObjectTable(name as string),
  };
  if (body.relations !== undefined && body.relations !== null) {
    if (!Array.isArray(body.relations)) invalids.push({ field: 'relations', reason: 'must be array' });
    else
      body.relations.forEach((raw, i) => {
        const parsed = parseRelationIn(raw, `relations.${i}.`, object, schema);
        if (Array.isArray(parsed)) invalids.push(...parsed);
        else object.relations.push(parsed);
      });
  }
  if (invalids.length) throw ApiError.invalid(invalids);
  return object;
}

/**
 * New fields of an existing object (`POST .../fields`): one field, or `{fields: [...]}` (the spec's
 * examples show both). All or none are created.
 */
export function parseNewFields(body: unknown, object: ObjectDef): { fields: FieldDef[]; many: boolean } {
  if (!isObject(body)) throw ApiError.invalid([{ field: 'body', reason: 'must be object' }]);
  const many = Array.isArray(body.fields);
  const raws = many ? (body.fields as unknown[]) : [body];
  if (raws.length === 0)
    throw ApiError.invalid([{ field: 'fields', reason: 'must list at least one field' }]);
  const invalids: Invalid[] = [];
  const fields: FieldDef[] = [];
  raws.forEach((raw, i) => {
    const parsed = parseField(raw, many ? `fields.${i}.` : '', [...object.fields, ...fields], false, object);
    if (Array.isArray(parsed)) invalids.push(...parsed);
    else fields.push(parsed);
  });
  if (invalids.length) throw ApiError.invalid(invalids);
  return { fields, many };
}

function parseField(
  raw: unknown,
  prefix: string,
  existing: readonly FieldDef[],
  creatingObject: boolean,
  object: ObjectDef | undefined,
): FieldDef | Invalid[] {
  if (!isObject(raw)) return [{ field: prefix ? prefix.slice(0, -1) : 'body', reason: 'must be object' }];
  const invalids: Invalid[] = [];
  const nameProblem = snakeCaseProblem(raw.name);
  const name = raw.name as string;
  if (nameProblem) invalids.push({ field: `${prefix}name`, reason: nameProblem });
  else {
    const owner = existing.find((f) => f.name === name);
    if (owner)
      invalids.push({
        field: `${prefix}name`,
        reason: alreadyUsed(`a field of ${object?.name ?? 'the object'}`),
      });
    else if (object && isReservedField(object.name, name))
      invalids.push({ field: `${prefix}name`, reason: alreadyUsed(`the platform in ${object.name}`) });
  }
  if (!isCustomFieldType(raw.type))
    invalids.push({ field: `${prefix}type`, reason: `must be one of ${CUSTOM_FIELD_TYPES.join(', ')}` });
  const displayProblem = displayNameProblem(raw.display_name);
  if (displayProblem) invalids.push({ field: `${prefix}display_name`, reason: displayProblem });
  else {
    const key = displayKey(raw.display_name as string);
    const owner = existing.find((f) => displayKey(f.display_name) === key);
    if (owner) invalids.push({ field: `${prefix}display_name`, reason: alreadyUsed(`field ${owner.name}`) });
  }
  const description = raw.description ?? '';
  if (typeof description !== 'string' || [...description].length > MAX_DESCRIPTION_LENGTH)
    invalids.push({
      field: `${prefix}description`,
      reason: `must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters`,
    });
  const primary = raw.primary ?? raw.primary_key ?? false;
  if (typeof primary !== 'boolean') invalids.push({ field: `${prefix}primary`, reason: 'must be boolean' });
  else if (primary && !creatingObject)
    // Spec "Schema resources": the primary-key flag is only allowed when the object is created.
    invalids.push({
      field: `${prefix}primary`,
      reason: 'a primary key can only be set when the object is created',
    });
  if (invalids.length) return invalids;
  return {
    name,
    display_name: (raw.display_name as string).trim(),
    type: raw.type as CustomFieldType,
    description: description as string,
    primary: primary === true,
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
export function parseNewRelation(body: unknown, object: ObjectDef, schema: AccountSchema): RelationDef {
  const parsed = parseRelationIn(body, '', object, schema);
  if (Array.isArray(parsed)) throw ApiError.invalid(parsed);
  return parsed;
}

/**
 * A relation of `object` (the parent): a unique name that is no field's, an existing child object, and
 * join fields from parent fields to the child's whole primary key, of matching types.
 */
function parseRelationIn(
  raw: unknown,
  prefix: string,
  object: ObjectDef,
  schema: AccountSchema,
): RelationDef | Invalid[] {
  if (!isObject(raw)) return [{ field: prefix ? prefix.slice(0, -1) : 'body', reason: 'must be object' }];
  const invalids: Invalid[] = [];
  const nameProblem = snakeCaseProblem(raw.name);
  const name = raw.name as string;
  if (nameProblem) invalids.push({ field: `${prefix}name`, reason: nameProblem });
  else if (object.relations.some((r) => r.name === name))
    invalids.push({ field: `${prefix}name`, reason: alreadyUsed(`a relation of ${object.name}`) });
  else if (object.fields.some((f) => f.name === name))
    // Export selects address both as `<name>.…` / `<name>`: one name cannot mean both.
    invalids.push({ field: `${prefix}name`, reason: alreadyUsed(`a field of ${object.name}`) });
  const displayProblem = displayNameProblem(raw.display_name);
  if (displayProblem) invalids.push({ field: `${prefix}display_name`, reason: displayProblem });
  else if (
    object.relations.some((r) => displayKey(r.display_name) === displayKey(raw.display_name as string))
  )
    invalids.push({ field: `${prefix}display_name`, reason: alreadyUsed(`a relation of ${object.name}`) });

  const childName = raw.child_object;
  let child: ObjectDef | undefined;
  if (typeof childName !== 'string' || childName === '')
    invalids.push({ field: `${prefix}child_object`, reason: 'is required' });
  else {
    child = childName === object.name || childName === object.alias ? object : schema.object(childName);
    if (!child)
      invalids.push({ field: `${prefix}child_object`, reason: `unable to locate object ${childName}` });
  }

  const joins: JoinField[] = [];
  if (!Array.isArray(raw.join_fields) || raw.join_fields.length === 0) {
    invalids.push({ field: `${prefix}join_fields`, reason: 'must list at least one {parent, child} pair' });
  } else {
    raw.join_fields.forEach((pair, i) => {
      const at = `${prefix}join_fields.${i}`;
      // The spec's parameter table names the pair source/target; its example parent/child.
      const p = isObject(pair) ? (pair.parent ?? pair.source) : undefined;
      const c = isObject(pair) ? (pair.child ?? pair.target) : undefined;
      if (typeof p !== 'string' || typeof c !== 'string') {
        invalids.push({ field: at, reason: 'must be {parent, child} with two field names' });
        return;
      }
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
  }
  if (invalids.length) return invalids;
  return {
    name,
    display_name: (raw.display_name as string).trim(),
    child_object: child!.name,
    join_fields: joins,
    created_by: 'account',
  };
}
