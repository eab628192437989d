import 'reflect-metadata';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { ApiError } from '@cdp/contracts';
import { FileMetadataStore } from '@cdp/metadata/file';
import { AccountModules, SchemaRegistry } from '@cdp/schema';
import { ObjectRecordsPipe, type ObjectRecordsRequest } from './object-records.pipe.js';

/** The pipe on a real (file) metadata store: an account with a `stores` object and one without the module. */
describe('ObjectRecordsPipe (POST /v3/objects/{object})', () => {
  const metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-object-records-')));
  const registry = new SchemaRegistry(metadata);
  const modules = new AccountModules(metadata);
  const pipe = new ObjectRecordsPipe(registry, modules);
  const request = (object: string, body: unknown, account = 'acc'): ObjectRecordsRequest => ({
    object,
    body,
    account,
    receivedAt: 1_700_000_000_000,
  });
  const refusal = async (call: Promise<unknown>): Promise<ApiError> => {
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  };

  beforeAll(async () => {
    for (const account of ['acc', 'off']) {
      await registry.createObject(account, {
        name: 'stores',
        display_name: 'Stores',
        alias: 'store',
        fields: [
          { name: 'store_id', type: 'string', display_name: 'ID', primary: true },
          { name: 'area', type: 'number', display_name: 'Area' },
        ],
      });
    }
    await modules.change('acc', { custom_objects: 'enabled' });
    await modules.change('off', { custom_objects: 'available' });
  });

  it("reads an account object's records by its fields, under its name when the path names its alias", async () => {
    const batch = await pipe.transform(request('store', [{ store_id: 's1', area: '12.5', colour: 'red' }]));
    expect(batch).toEqual({
      kind: 'objects',
      object: 'stores',
      receivedAt: 1_700_000_000_000,
      records: [{ store_id: 's1', area: 12.5 }],
    });
  });

  it('answers every invalid record at once, by index', async () => {
    const err = await refusal(
      pipe.transform(request('stores', [{ area: 1 }, { store_id: 's2', area: 'x' }])),
    );
    expect(err.status).toBe(400);
    expect(err.detail).toEqual({
      invalids: [
        expect.objectContaining({ event: 0, field: 'store_id', reason: 'is required (primary key)' }),
        expect.objectContaining({ event: 1, field: 'area' }),
      ],
    });
  });

  it('takes customer records as profile updates, fields named at the top of the record', async () => {
    const batch = await pipe.transform(request('customers', { email: 'ann@example.com' }));
    expect(batch).toMatchObject({
      kind: 'profiles',
      records: [{ identifiers: { email: 'ann@example.com' } }],
    });
    const err = await refusal(pipe.transform(request('customers', { email: 'no-at-sign' })));
    expect(err.detail).toEqual({ invalids: [expect.objectContaining({ event: 0, field: 'email' })] });
  });

  it('refuses an unknown object (404), a module that is off (403), a built-in object it cannot write (400)', async () => {
    expect((await refusal(pipe.transform(request('planets', {})))).status).toBe(404);
    expect((await refusal(pipe.transform(request('stores', { store_id: 's' }, 'off')))).status).toBe(403);
    const events = await refusal(pipe.transform(request('events', {})));
    expect(events.status).toBe(400);
    expect(events.detail).toEqual({ message: 'events cannot be written through /v3/objects' });
  });
});
