import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { ArgumentMetadata } from '@nestjs/common';
import { ApiError, type Invalid } from '@cdp/contracts';
import { EnvelopeValidation } from '../validation/envelope-validation.pipe.js';
import { NewFieldsValidation, ObjectDefDto, RelationDefDto } from './schema.dto.js';

const body = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({ type: 'body', metatype });

/** The invalids a pipe answers with, or undefined when the value passes. */
async function invalidsOf(
  value: unknown,
  check: (value: unknown) => Promise<unknown>,
): Promise<Invalid[] | undefined> {
  try {
    await check(value);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError & { detail: { invalids: Invalid[] } }).detail.invalids;
  }
}

const asObject = (value: unknown) => EnvelopeValidation.transform(value, body(ObjectDefDto));
const asRelation = (value: unknown) => EnvelopeValidation.transform(value, body(RelationDefDto));
const asFields = (value: unknown) => NewFieldsValidation.transform(value, body(Object));

const stores = {
  name: 'stores',
  display_name: 'Stores',
  alias: 'store',
  fields: [
    { name: 'store_id', type: 'string', display_name: 'Store ID', primary: true },
    { name: 'size', type: 'number', display_name: 'Size' },
  ],
};

describe('a new object (POST /v3/schema/objects)', () => {
  it('passes as it came when its shape and names keep the rules', async () => {
    await expect(asObject(stores)).resolves.toBe(stores);
    // No alias: absent, null or ''; `primary_key` is read as `primary`.
    for (const alias of [undefined, null, ''])
      expect(await invalidsOf({ ...stores, alias }, asObject)).toBeUndefined();
    const keyed = {
      ...stores,
      fields: [{ name: 'id', type: 'string', display_name: 'ID', primary_key: true }],
    };
    expect(await invalidsOf(keyed, asObject)).toBeUndefined();
  });

  it('refuses names that break the naming rules, naming each field, in declaration order', async () => {
    expect(
      await invalidsOf({ ...stores, name: 'Store', alias: 'stores', display_name: ' ' }, asObject),
    ).toEqual([
      { field: 'name', reason: expect.stringContaining('snake case') },
      { field: 'display_name', reason: 'is required' },
      { field: 'alias', reason: 'must be singular (the object name is the plural)' },
    ]);
    expect(await invalidsOf({ ...stores, name: 'store', alias: undefined }, asObject)).toEqual([
      { field: 'name', reason: 'must be plural (end in s)' },
    ]);
    expect(await invalidsOf({ ...stores, name: 'x'.repeat(65) + 's' }, asObject)).toEqual([
      { field: 'name', reason: 'must NOT have more than 64 characters' },
    ]);
  });

  it('needs fields, one of them the primary key', async () => {
    const fields = stores.fields.map((f) => ({ ...f, primary: false }));
    expect(await invalidsOf({ ...stores, fields }, asObject)).toEqual([
      { field: 'fields', reason: 'at least one field must be the primary key (primary: true)' },
    ]);
    for (const none of [[], undefined, 'store_id'])
      expect(await invalidsOf({ ...stores, fields: none }, asObject)).toEqual([
        { field: 'fields', reason: 'must list the fields, at least one of them primary' },
      ]);
  });

  it('checks every field and relation by its index, all in one answer', async () => {
    const invalids = await invalidsOf(
      {
        ...stores,
        fields: [
          ...stores.fields,
          { name: '', type: 'decimal', display_name: '', description: 5, primary: 'yes' },
        ],
        relations: [{ name: 'Home', display_name: 'Home', child_object: '', join_fields: [{ parent: 1 }] }],
      },
      asObject,
    );
    expect(invalids).toEqual([
      { field: 'fields.2.name', reason: 'is required' },
      { field: 'fields.2.type', reason: 'must be one of string, text, number, timestamp, boolean' },
      { field: 'fields.2.display_name', reason: 'is required' },
      { field: 'fields.2.description', reason: 'must be a string of at most 1024 characters' },
      { field: 'fields.2.primary', reason: 'must be boolean' },
      { field: 'relations.0.name', reason: expect.stringContaining('snake case') },
      { field: 'relations.0.child_object', reason: 'is required' },
      { field: 'relations.0.join_fields.0.parent', reason: 'must be a field name of the object' },
      {
        field: 'relations.0.join_fields.0.child',
        reason: 'must be a primary-key field name of the child object',
      },
    ]);
    expect(await invalidsOf({ ...stores, relations: {} }, asObject)).toEqual([
      { field: 'relations', reason: 'must be array' },
    ]);
  });

  it('refuses a body that is no object', async () => {
    expect(await invalidsOf([stores], asObject)).toEqual([{ field: 'body', reason: 'must be an object' }]);
  });
});

describe('new fields (POST .../fields): one field, or {fields: [...]}', () => {
  it('checks one field at the top of the body', async () => {
    expect(
      await invalidsOf({ name: 'tier', type: 'number', display_name: 'Tier' }, asFields),
    ).toBeUndefined();
    expect(await invalidsOf({ name: '', type: 'money', display_name: '' }, asFields)).toEqual([
      { field: 'name', reason: 'is required' },
      { field: 'type', reason: 'must be one of string, text, number, timestamp, boolean' },
      { field: 'display_name', reason: 'is required' },
    ]);
  });

  it('checks several under `fields`, by index; an empty list is refused', async () => {
    const two = {
      fields: [
        { name: 'a', type: 'text', display_name: 'A' },
        { name: 'b', type: 'bool', display_name: 'B' },
      ],
    };
    expect(await invalidsOf(two, asFields)).toEqual([
      { field: 'fields.1.type', reason: expect.stringMatching(/^must be one of/) },
    ]);
    expect(await invalidsOf({ fields: [] }, asFields)).toEqual([
      { field: 'fields', reason: 'must list at least one field' },
    ]);
    expect(await invalidsOf('tier', asFields)).toEqual([{ field: 'body', reason: 'must be an object' }]);
  });
});

describe('a new relation (POST .../relations)', () => {
  it('accepts the pairs as parent/child or source/target', async () => {
    const relation = { name: 'home', display_name: 'Home', child_object: 'stores' };
    for (const pair of [
      { parent: 'store_id', child: 'store_id' },
      { source: 'store_id', target: 'store_id' },
    ])
      expect(await invalidsOf({ ...relation, join_fields: [pair] }, asRelation)).toBeUndefined();
    expect(await invalidsOf({ ...relation, join_fields: [] }, asRelation)).toEqual([
      { field: 'join_fields', reason: 'must list at least one {parent, child} pair' },
    ]);
  });
});
