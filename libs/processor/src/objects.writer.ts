import { Inject, Injectable } from '@nestjs/common';
import { acceptanceOrder, drop, ok, type Delivery, type Step, type StepResult } from '@cdp/bus';
import type { ObjectsMessage } from '@cdp/contracts';
import { toStoreTime } from '@cdp/domain';
import { LOGGER, type Logger } from '@cdp/logger';
import { SchemaRegistry } from '@cdp/schema';
import { AnalyticStore, objectFieldAtColumn } from '@cdp/store';

export interface ObjectsInput {
  account: string;
  object: string;
  /** The batch's deliveries of records of this object. */
  deliveries: readonly Delivery[];
}

/** The rows of an object's records, for its own table. */
export interface ObjectRows {
  table: string;
  rows: ({ _msg_id: string } & Record<string, unknown>)[];
}

/** Groups a batch's object deliveries by account and object, in order. */
export function objectGroups(deliveries: readonly Delivery[]): ObjectsInput[] {
  const groups = new Map<string, { account: string; object: string; deliveries: Delivery[] }>();
  for (const d of deliveries) {
    const m = d.message as ObjectsMessage;
    const key = `${m.account}/${m.object}`;
    const group = groups.get(key) ?? { account: m.account, object: m.object, deliveries: [] };
    group.deliveries.push(d);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/**
 * Turns records of account-created objects (`POST /v3/objects/{object}`) into rows of the object's own
 * table, created — or given the columns of newer fields — by this process, which owns the store.
 */
@Injectable()
export class ObjectsWriter implements Step<ObjectsInput, ObjectRows> {
  /** Schema revision each object table was last made to match, by `account/object`. */
  private readonly applied = new Map<string, number>();

  constructor(
    private readonly registry: SchemaRegistry,
    private readonly store: AnalyticStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async run({ account, object: objectName, deliveries }: ObjectsInput): Promise<StepResult<ObjectRows>> {
    const sent = new Set<string>();
    for (const d of deliveries)
      for (const r of (d.message as ObjectsMessage).records) for (const n in r) sent.add(n);
    let schema = await this.registry.read(account);
    const known = () => schema.object(objectName)?.fields.map((f) => f.name) ?? [];
    if ([...sent].some((n) => !known().includes(n))) schema = await this.registry.read(account, true);
    const object = schema.object(objectName);
    if (!object) {
      // The API checked the object exists; objects are never deleted. Nothing to store it in.
      this.logger.error({ account, object: objectName }, 'records of an unknown object were dropped');
      return drop('unknown-object');
    }
    const key = `${account}/${object.name}`;
    if ((this.applied.get(key) ?? -1) < schema.revision) {
      await this.store.ensureObjectTable(
        account,
        object.table,
        object.fields.map((f) => ({ name: f.name, type: f.type, primary: f.primary })),
      );
      this.applied.set(key, schema.revision);
    }
    const types = new Map(object.fields.map((f) => [f.name, f.type]));
    const keyFields = new Set(object.fields.filter((f) => f.primary).map((f) => f.name));
    const now = toStoreTime(Date.now());
    const rows = deliveries.flatMap((d) =>
      (d.message as ObjectsMessage).records.map((record, index) => {
        const at = acceptanceOrder(d, index);
        const row: { _msg_id: string } & Record<string, unknown> = {
          _msg_id: d.message.id,
          _updated_at: now,
        };
        for (const [name, value] of Object.entries(record)) {
          const type = types.get(name);
          if (!type) continue;
          row[name] = type === 'timestamp' && typeof value === 'number' ? toStoreTime(value * 1000) : value;
          // The value with the record's place in acceptance order, for the reads (a null changes nothing,
          // as in the plain column); a primary key field has none.
          if (row[name] !== null && !keyFields.has(name)) row[objectFieldAtColumn(name)] = [at, row[name]];
        }
        return row;
      }),
    );
    return ok({ table: object.table, rows });
  }
}
