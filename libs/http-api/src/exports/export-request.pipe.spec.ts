import 'reflect-metadata';
import { ApiError } from '@cdp/contracts';
import { ExportRequestValidation } from './export-request.pipe.js';

/** The body as `POST /v3/exports` reads it: ExportRequestDto through the envelope pipe, then the detail. */
const parseExportRequest = (body: unknown) => ExportRequestValidation.transform(body, { type: 'body' });

const cmp = (field: string, operator: string, value: unknown) => ({ field, operator, value });

describe('names in a select', () => {
  it('refuses names that are not plain identifiers before they reach the catalog', async () => {
    for (const field of ['name"; --', 'na me', 'Name', '1id', 'parent..id', '']) {
      await expect(parseExportRequest({ select: { object: 'items', fields: [field] } })).rejects.toThrow(
        ApiError,
      );
      await expect(
        parseExportRequest({ select: { object: 'items', fields: ['id'], filter: cmp(field, '=', 1) } }),
      ).rejects.toThrow(ApiError);
    }
  });
});

describe('export request', () => {
  const invalid = async (body: unknown): Promise<{ field: unknown; reason: string }[]> => {
    try {
      await parseExportRequest(body);
    } catch (err) {
      const detail = (err as ApiError).detail;
      expect((err as ApiError).status).toBe(400);
      return 'invalids' in detail ? detail.invalids : [{ field: undefined, reason: detail.message }];
    }
    throw new Error('accepted');
  };

  it('defaults to CSV, comma and every object', async () => {
    expect(await parseExportRequest({})).toEqual({ format: 'CSV', delimiter: 'comma', objects: [] });
    expect(await parseExportRequest({ objects: ['events'], format: 'parquet', delimiter: 'PIPE' })).toEqual({
      format: 'Parquet',
      delimiter: 'pipe',
      objects: ['events'],
    });
  });

  it('400 for an unknown format or delimiter, or a malformed objects list', async () => {
    expect((await invalid({ format: 'xlsx' }))[0]!.field).toBe('format');
    expect((await invalid({ delimiter: ';' }))[0]!.field).toBe('delimiter');
    expect((await invalid({ objects: 'events' }))[0]!.field).toBe('objects');
    expect((await invalid({ objects: [] }))[0]!.field).toBe('objects');
    expect((await invalid([]))[0]!.reason).toMatch(/JSON object/);
  });

  it('400 for an unknown operator, a missing value, or null outside is / is not', async () => {
    const sel = (filter: unknown) => ({ select: { object: 'events', fields: ['*'], filter } });
    expect((await invalid(sel({ field: 'type', operator: '==', value: 'x' })))[0]!.field).toBe(
      'select.filter.operator',
    );
    expect((await invalid(sel({ field: 'type', operator: 'in', value: 'x' })))[0]!.field).toBe(
      'select.filter.operator',
    );
    expect((await invalid(sel({ field: 'type', operator: '=' })))[0]!.field).toBe('select.filter.value');
    expect((await invalid(sel({ field: 'type', operator: '=', value: null })))[0]!.reason).toMatch(
      /is or is not/,
    );
    expect((await invalid(sel({ field: 'type', operator: 'is', value: 'x' })))[0]!.reason).toMatch(
      /null only/,
    );
    expect((await invalid(sel({ field: 'type', operator: 'like', value: 3 })))[0]!.reason).toMatch(
      /string pattern/,
    );
    expect((await invalid(sel({ and: [] })))[0]!.field).toBe('select.filter.and');
    expect(
      (await invalid(sel({ and: [{ field: 'type', operator: '=', value: 'x' }], or: [] })))[0]!.field,
    ).toBe('select.filter.and');
    expect((await invalid(sel({ or: [{ field: 'type', operator: 'x', value: 1 }] })))[0]!.field).toBe(
      'select.filter.or[0].operator',
    );
    expect((await invalid(sel({ field: 'type', operator: '=', value: { $ne: 1 } })))[0]!.field).toBe(
      'select.filter.value',
    );
    expect((await invalid(sel('type = 1')))[0]!.field).toBe('select.filter');
  });

  it('bounds the nesting depth of a filter with a 400, not a crash', async () => {
    let deep: unknown = { field: 'type', operator: '=', value: 'x' };
    for (let i = 0; i < 10_000; i++) deep = { and: [deep] };
    expect((await invalid({ select: { object: 'events', fields: ['*'], filter: deep } }))[0]!.reason).toMatch(
      /levels deep/,
    );
  });

  it('400 for a select without object or fields, or with a bad sort order', async () => {
    expect((await invalid({ select: { fields: ['*'] } }))[0]!.field).toBe('select.object');
    expect((await invalid({ select: { object: 'events' } }))[0]!.field).toBe('select.fields');
    expect((await invalid({ select: { object: 'events', fields: [] } }))[0]!.field).toBe('select.fields');
    expect(
      (
        await invalid({ select: { object: 'events', fields: ['*'], sorts: [{ field: 'ts', order: 'up' }] } })
      )[0]!.field,
    ).toBe('select.sorts[0].order');
  });
});

describe('members named like the prototype chain', () => {
  it('are ignored where the request names no such member, wherever they are', async () => {
    const filter = '{"field":"type","operator":"=","value":"x"}';
    for (const key of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString']) {
      for (const value of ['{"polluted":1}', '{"prototype":{"polluted":1}}', 'null', '1', '"x"']) {
        const member = `"${key}":${value}`;
        const body: unknown = JSON.parse(
          `{${member},"select":{${member},"object":"events","fields":["*"],"sorts":[{${member},"field":"ts"}],"filter":{"and":[${filter}]}}}`,
        );
        expect(await parseExportRequest(body)).toMatchObject({ objects: ['events'] });
      }
    }
  });
});
