import { Injectable } from '@nestjs/common';
import type { CustomFieldType } from '@cdp/domain';
import { SchemaRegistry, type ObjectDef } from '@cdp/schema';
import { currentObjectRowsSql } from '@cdp/store';
import {
  BUILT_IN_CATALOG,
  ExportCatalogs,
  type ColumnType,
  type ExportCatalog,
  type ExportObject,
  type ExportRelation,
} from './export-objects.js';

const TYPES: Record<CustomFieldType, ColumnType> = {
  string: 'string',
  text: 'string',
  // Exact decimals (CUSTOM_DECIMAL), never doubles.
  number: 'decimal',
  timestamp: 'timestamp',
  boolean: 'boolean',
};

function relations(object: ObjectDef): ExportRelation[] {
  return object.relations
    .filter((r) => r.created_by === 'account')
    .map((r) => ({ name: r.name, childObject: r.child_object, joinFields: r.join_fields }));
}

/**
 * An account's catalog from its schema (spec "Schema API"): the built-in objects with the fields and
 * relations the account added to them, and every object the account created, read from its table
 * (`obj_<name>`, one current row per primary key).
 */
@Injectable()
export class SchemaExportCatalogs extends ExportCatalogs {
  constructor(private readonly schema: SchemaRegistry) {
    super();
  }

  async forAccount(account: string, fresh = false): Promise<ExportCatalog> {
    const schema = await this.schema.read(account, fresh);
    const objects: ExportObject[] = [];
    for (const name of BUILT_IN_CATALOG.names()) {
      const builtIn = BUILT_IN_CATALOG.object(name)!;
      const def = schema.object(name);
      if (!def) continue;
      const added = def.fields.filter((f) => f.created_by === 'account');
      const own = relations(def);
      if (added.length === 0 && own.length === 0) continue;
      objects.push({
        ...builtIn,
        columns: [...builtIn.columns, ...added.map((f) => ({ name: f.name, type: TYPES[f.type] }))],
        relations: [...builtIn.relations, ...own],
        ...(added.length
          ? {
              declared: {
                kind: 'fields' as const,
                table: def.table,
                columns: added.map((f) => ({ name: f.name, type: f.type })),
              },
            }
          : {}),
      });
    }
    for (const def of schema.objects()) {
      if (def.created_by !== 'account') continue;
      objects.push({
        name: def.name,
        // Each field as acceptance order leaves it, not as the last insert did (custom-columns.sql.ts).
        from: `(${currentObjectRowsSql('{db}', def.table, def.fields)})`,
        columns: def.fields.map((f) => ({ name: f.name, type: TYPES[f.type] })),
        pageKey: def.fields.filter((f) => f.primary).map((f) => f.name),
        relations: relations(def),
        declared: {
          kind: 'object',
          table: def.table,
          columns: def.fields.map((f) => ({ name: f.name, type: f.type, primary: f.primary })),
        },
      });
    }
    return BUILT_IN_CATALOG.with(...objects);
  }
}
