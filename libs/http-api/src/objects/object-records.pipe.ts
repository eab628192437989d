import { createParamDecorator, Injectable, type ExecutionContext, type PipeTransform } from '@nestjs/common';
import {
  ApiError,
  BatchValidator,
  type Invalid,
  type ObjectsMessage,
  type ProfilesMessage,
} from '@cdp/contracts';
import { readCustomFields, type CustomValue } from '@cdp/domain';
import { AccountModules, SchemaRegistry, type AccountSchema, type ObjectDef } from '@cdp/schema';
import type { AuthedRequest } from '../auth/principal.js';
import type { BatchRequest } from '../ingest/batch-validation.pipe.js';
import { profilesValidator } from '@cdp/records';

/** A `POST /v3/objects/{object}` body with the object named in its path (a name or an alias). */
export interface ObjectRecordsRequest extends BatchRequest {
  object: string;
}

/**
 * The body of `POST /v3/objects/{object}`, with its account, time of receipt and the path's object,
 * for the ObjectRecordsPipe: `@ObjectBody(ObjectRecordsPipe) batch: ObjectRecordsBatch`.
 */
export const ObjectBody = createParamDecorator((_: unknown, ctx: ExecutionContext): ObjectRecordsRequest => {
  const request = ctx.switchToHttp().getRequest<AuthedRequest & { params: { object: string } }>();
  if (!request.principal) throw new Error('route reached without authentication');
  return {
    body: request.body,
    account: request.principal.account,
    receivedAt: Date.now(),
    object: request.params.object,
  };
});

type Batch<M> = Omit<M, 'id' | 'account' | 'resend'>;

/** The records of a request, valid and normalized, as the bus message of their object's kind. */
export type ObjectRecordsBatch = Batch<ObjectsMessage> | Batch<ProfilesMessage>;

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

/** Customer records are profile updates, the same as `POST /v3/profiles` with their fields as attributes. */
function customerRecords(body: unknown, schema: AccountSchema): ProfilesMessage['records'] {
  const wrap = (record: unknown) => ({ attributes: record });
  try {
    return profilesValidator.parse(Array.isArray(body) ? body.map(wrap) : wrap(body), {
      custom: schema.customFields('customers'),
      customIds: schema.identifierNames,
    });
  } catch (err) {
    if (!(err instanceof ApiError && 'invalids' in err.detail)) throw err;
    // The fields are at the top of each record here, not under `attributes`.
    throw ApiError.invalid(
      err.detail.invalids.map((i) => ({
        ...i,
        field: typeof i.field === 'string' ? i.field.replace(/^attributes\.?/, '') || 'body' : i.field,
      })),
    );
  }
}

/**
 * Validates `POST /v3/objects/{object}` (spec "Update Object"): one record or an array of at most 1000,
 * read by the rules of the path's object, which is why this pipe needs the path and the account's
 * schema. Account objects share one rule (their fields, their primary key) and need the custom_objects
 * module (403 while it is off); customers are profile updates. The product feed and order updates have
 * static routes of their own (CommerceObjectsController); other built-in objects are not writable here.
 */
@Injectable()
export class ObjectRecordsPipe implements PipeTransform<ObjectRecordsRequest, Promise<ObjectRecordsBatch>> {
  constructor(
    private readonly registry: SchemaRegistry,
    private readonly modules: AccountModules,
  ) {}

  async transform(request: ObjectRecordsRequest): Promise<ObjectRecordsBatch> {
    const { account, body, receivedAt } = request;
    let schema = await this.registry.read(account);
    // An object created a moment ago through another replica: read once more before refusing.
    if (!schema.object(request.object)) schema = await this.registry.read(account, true);
    const object = schema.object(request.object);
    if (!object) throw ApiError.notFound(`unable to locate object ${request.object}`);
    if (object.created_by === 'account') {
      await this.modules.require(account, 'custom_objects');
      return { kind: 'objects', object: object.name, receivedAt, records: objectRecords.parse(body, object) };
    }
    if (object.name === 'customers')
      return { kind: 'profiles', receivedAt, records: customerRecords(body, schema) };
    throw ApiError.badRequest(`${object.name} cannot be written through /v3/objects`);
  }
}
