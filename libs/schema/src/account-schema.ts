import type { CustomFields, CustomIdentifier, CustomIdentifierNames } from '@cdp/domain';
import { BUILTIN_OBJECTS } from './builtin-objects.js';
import type { AccountSchemaDoc, FieldDef, ObjectDef } from './schema.model.js';

/**
 * One account's schema as everything reads it: the built-in objects with the account's additions,
 * and the account's own objects. Immutable; a change makes a new one with a higher revision.
 */
export class AccountSchema {
  private readonly byName = new Map<string, ObjectDef>();
  private readonly byAlias = new Map<string, ObjectDef>();
  private readonly customCache = new Map<string, CustomFields>();
  /** The names of the account's custom identifiers, and those of low merge confidence. */
  readonly identifierNames: CustomIdentifierNames;
  readonly lowConfidenceIdentifiers: CustomIdentifierNames;

  constructor(
    readonly doc: AccountSchemaDoc,
    /** Revision of the stored record (0 while the account has made nothing). */
    readonly revision: number,
  ) {
    for (const builtin of BUILTIN_OBJECTS) {
      const ext = doc.extensions[builtin.name];
      this.add({
        ...builtin,
        fields: [...builtin.fields, ...(ext?.fields ?? [])],
        relations: [...builtin.relations, ...(ext?.relations ?? [])],
      });
    }
    for (const object of doc.objects) this.add(object);
    this.identifierNames = new Set(this.customIdentifiers().map((i) => i.name));
    this.lowConfidenceIdentifiers = new Set(
      this.customIdentifiers()
        .filter((i) => i.merge_confidence === 'low')
        .map((i) => i.name),
    );
  }

  /**
   * The account's custom identifiers, oldest first. Everything that reads identifiers (events, profiles,
   * lookups, bulk files, recommendations) takes them from here, with `identifierNames` for the domain's
   * identifier functions (extractIdentifiers, collectIdentifiers, isIdentifierField).
   */
  customIdentifiers(): readonly CustomIdentifier[] {
    return this.doc.identifiers ?? [];
  }

  private add(object: ObjectDef): void {
    this.byName.set(object.name, object);
    if (object.alias) this.byAlias.set(object.alias, object);
  }

  objects(): ObjectDef[] {
    return [...this.byName.values()];
  }

  /** An object by its name or its alias (spec: the alias is "usable for ingest"). */
  object(nameOrAlias: string): ObjectDef | undefined {
    return this.byName.get(nameOrAlias) ?? this.byAlias.get(nameOrAlias);
  }

  /**
   * The fields the account made on an object, by name and type: the ones ingestion reads by their type
   * (built-in fields have rules of their own). Every field of an account's object is one.
   */
  customFields(objectName: string): CustomFields {
    let fields = this.customCache.get(objectName);
    if (!fields) {
      const object = this.object(objectName);
      fields = Object.fromEntries(
        (object?.fields ?? []).filter((f) => f.created_by === 'account').map((f) => [f.name, f.type]),
      );
      this.customCache.set(objectName, fields);
    }
    return fields;
  }

  field(objectName: string, fieldName: string): FieldDef | undefined {
    return this.object(objectName)?.fields.find((f) => f.name === fieldName);
  }
}
