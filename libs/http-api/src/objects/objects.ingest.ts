import { Injectable } from '@nestjs/common';
import { ApiError, BatchValidator, type Invalid } from '@cdp/contracts';
import { readCustomFields, type CustomValue } from '@cdp/domain';
import { AccountModules, SchemaRegistry, type AccountSchema, type ObjectDef } from '@cdp/schema';
import { IngestPublisher } from '../ingest/ingest.publisher.js';
import { profilesValidator } from '../profiles/profiles.validator.js';

/** One accepted `POST /v3/objects/{object}` request, for the handler of its object. */
export interface ObjectUpsertRequest {
  account: string;
  requestId: string;
  receivedAt: number;
  object: ObjectDef;
  schema: AccountSchema;
  body: unknown;
}

/** Validates a request's records and publishes them; resolves once the bus holds them durably. */
export type ObjectUpsertHandler = (request: ObjectUpsertRequest) => Promise<void>;

/** Records of an account's object: an object each; the rule below reads them by the object's fields. */
const objectRecords = new BatchValidator<Record<string, unknown>, Record<string, CustomValue>, ObjectDef>(
  { type: 'object' },
  'record',
  (record, index, object) => {
    const fields = Object.fromEntries(object.fields.map((f) => [f.name, f.type]));
    const { values, invalids } = readCustomFields(record, fields);
    const out: Invalid[] = invalids.map((i) => ({ event: index, ...i }));
    for (const key of object.fields.filter((f) => f.primary)) {
      const v = values[key.name];
      if (v === undefined || v === null || v === '')
        out.push({ event: index, field: key.name, reason: 'is required (primary key)' });
    }
    if (out.length) return out;
    // Fields the object does not define are dropped (spec "Custom objects and fields"); so are nulls.
    const kept: Record<string, CustomValue> = {};
    for (const [name, value] of Object.entries(values)) if (value !== null) kept[name] = value;
    return kept;
  },
);

/**
 * `POST /v3/objects/{object}`: upserts one record or an array of at most 1000 (spec "Update Object",
 * spec/NOTES.md "Limits"). Account objects share one write path; a built-in object is writable once a
 * handler for it is registered (customers here; products and orders by their own module).
 */
@Injectable()
export class ObjectsIngest {
  private readonly handlers = new Map<string, ObjectUpsertHandler>();

  constructor(
    private readonly registry: SchemaRegistry,
    private readonly publisher: IngestPublisher,
    private readonly modules: AccountModules,
  ) {
    this.register('customers', (r) => this.customers(r));
  }

  /** Makes a built-in object writable through `/v3/objects/{name}`. */
  register(objectName: string, handler: ObjectUpsertHandler): void {
    this.handlers.set(objectName, handler);
  }

  async upsert(account: string, requestId: string, objectName: string, body: unknown): Promise<void> {
    let schema = await this.registry.read(account);
    // An object created a moment ago through another replica: read once more before refusing.
    if (!schema.object(objectName)) schema = await this.registry.read(account, true);
    const object = schema.object(objectName);
    if (!object) throw ApiError.notFound(`unable to locate object ${objectName}`);
    const request = { account, requestId, receivedAt: Date.now(), object, schema, body };
    if (object.created_by === 'account') return this.accountObject(request);
    const handler = this.handlers.get(object.name);
    if (!handler) throw ApiError.badRequest(`${object.name} cannot be written through /v3/objects`);
    return handler(request);
  }

  private async accountObject(r: ObjectUpsertRequest): Promise<void> {
    // Records of account objects are the custom_objects module's: refused (403) while it is off.
    await this.modules.require(r.account, 'custom_objects');
    const records = objectRecords.parse(r.body, r.object);
    await this.publisher.publish({
      id: r.requestId,
      account: r.account,
      kind: 'objects',
      object: r.object.name,
      receivedAt: r.receivedAt,
      records,
    });
  }

  /** Customer records are profile updates, the same as `POST /v3/profiles` with their fields as attributes. */
  private async customers(r: ObjectUpsertRequest): Promise<void> {
    const wrap = (record: unknown) => ({ attributes: record });
    const body = Array.isArray(r.body) ? r.body.map(wrap) : wrap(r.body);
    let records;
    try {
      records = profilesValidator.parse(body, {
        custom: r.schema.customFields('customers'),
        customIds: r.schema.identifierNames,
      });
    } catch (err) {
      // The fields are at the top of each record here, not under `attributes`.
      if (err instanceof ApiError && 'invalids' in err.detail) {
        throw ApiError.invalid(
          err.detail.invalids.map((i) => ({
            ...i,
            field: typeof i.field === 'string' ? i.field.replace(/^attributes\.?/, '') || 'body' : i.field,
          })),
        );
      }
      throw err;
    }
    await this.publisher.publish({
      id: r.requestId,
      account: r.account,
      kind: 'profiles',
      receivedAt: r.receivedAt,
      records,
    });
  }
}
