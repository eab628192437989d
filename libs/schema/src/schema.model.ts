import type { CustomFieldType, CustomIdentifier } from '@cdp/domain';

/** Who made a field, object or relation (spec/NOTES.md: the system value is `svc`). */
export type CreatedBy = 'svc' | 'account';

export interface FieldDef {
  name: string;
  display_name: string;
  type: CustomFieldType;
  description: string;
  /** Part of the object's primary key (only set when the object is created). */
  primary: boolean;
  /** Populated by the platform itself (every built-in field). */
  auto: boolean;
  created_by: CreatedBy;
}

export interface JoinField {
  /** Field of the object holding the relation (the foreign key). */
  parent: string;
  /** Primary-key field of the child object. */
  child: string;
}

export interface RelationDef {
  name: string;
  display_name: string;
  child_object: string;
  join_fields: JoinField[];
  created_by: CreatedBy;
}

export interface ObjectDef {
  name: string;
  display_name: string;
  alias?: string;
  fields: FieldDef[];
  relations: RelationDef[];
  created_by: CreatedBy;
  /** The object's table in the account's database. */
  table: string;
}

/** The part of an account's schema the account made: its objects, and its additions to built-in ones. */
export interface AccountSchemaDoc {
  /** Objects the account created, whole. */
  objects: ObjectDef[];
  /** Fields and relations the account added to built-in objects, by object name. */
  extensions: Record<string, { fields: FieldDef[]; relations: RelationDef[] }>;
  /**
   * The account's custom identifiers (`POST /v3/schema/identifiers`), each also a field of customers and
   * of events (in `extensions`). Absent in records written before they existed.
   */
  identifiers?: CustomIdentifier[];
}

export const EMPTY_SCHEMA_DOC: AccountSchemaDoc = { objects: [], extensions: {} };

/** The API's view of a field (spec "Schema resources": Field). */
export interface FieldView {
  name: string;
  display_name: string;
  type: CustomFieldType;
  description: string;
  auto: boolean;
  created_by: CreatedBy;
  primary_key: boolean;
}

export interface RelationView {
  name: string;
  display_name: string;
  child_object: string;
  join_fields: JoinField[];
}

export interface ObjectView {
  name: string;
  display_name: string;
  alias: string | null;
  auto: boolean;
  created_by: CreatedBy;
  fields: FieldView[];
  relations: RelationView[];
}

export function fieldView(f: FieldDef): FieldView {
  return {
    name: f.name,
    display_name: f.display_name,
    type: f.type,
    description: f.description,
    auto: f.auto,
    created_by: f.created_by,
    primary_key: f.primary,
  };
}

export function relationView(r: RelationDef): RelationView {
  return {
    name: r.name,
    display_name: r.display_name,
    child_object: r.child_object,
    join_fields: r.join_fields.map((j) => ({ parent: j.parent, child: j.child })),
  };
}

export function objectView(o: ObjectDef): ObjectView {
  return {
    name: o.name,
    display_name: o.display_name,
    alias: o.alias ?? null,
    auto: o.created_by === 'svc',
    created_by: o.created_by,
    fields: o.fields.map(fieldView),
    relations: o.relations.map(relationView),
  };
}

/** Text and string are one kind of value: a relation may join a `text` field to a `string` key. */
export function sameValueKind(a: CustomFieldType, b: CustomFieldType): boolean {
  const kind = (t: CustomFieldType) => (t === 'text' ? 'string' : t);
  return kind(a) === kind(b);
}
