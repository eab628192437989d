import { ApiError, type Invalid } from './errors.js';
import { parseJsonBody } from './json-body.js';

function invalidsOf(body: Buffer | string): Invalid[] {
  try {
    parseJsonBody(Buffer.isBuffer(body) ? body : Buffer.from(body));
  } catch (err) {
    if (err instanceof ApiError && 'invalids' in err.detail) return err.detail.invalids;
    throw err;
  }
  throw new Error('accepted');
}

function messageOf(body: string): string {
  try {
    parseJsonBody(Buffer.from(body));
  } catch (err) {
    if (err instanceof ApiError && 'message' in err.detail) return err.detail.message;
    throw err;
  }
  throw new Error('accepted');
}

describe('parseJsonBody', () => {
  it('reads well-formed JSON, escapes, pairs and emoji included', () => {
    expect(parseJsonBody(Buffer.from('{"a":"\\ud83d\\ude00 😀 \\u00e9 \\u0000","b":[1,2]}'))).toEqual({
      a: '😀 😀 é \u0000',
      b: [1, 2],
    });
  });

  it('refuses a lone surrogate in a value, naming the field and the record of a batch', () => {
    expect(invalidsOf('{"attributes":{"name":"x\\udfff"}}')).toEqual([
      { field: 'attributes.name', reason: expect.stringContaining('well-formed') },
    ]);
    expect(invalidsOf('[{"a":"ok"},{"data":{"order":{"items":[{"sku":"a\\ud800b"}]}}}]')).toEqual([
      {
        event: 1,
        field: 'data.order.items.0.sku',
        reason: expect.stringContaining('well-formed'),
        message: expect.any(String),
      },
    ]);
    // A high surrogate followed by something other than a low one, and a reversed pair.
    expect(invalidsOf('{"a":"\\ud800\\u0041","b":"\\udc00\\ud800"}').map((i) => i.field)).toEqual(['a', 'b']);
  });

  it('refuses a lone surrogate in a key', () => {
    expect(invalidsOf('{"data":{"k\\ud800":1}}')).toEqual([
      { field: 'data.k\ufffd', reason: expect.stringContaining('field name') },
    ]);
  });

  it('refuses bytes that are not UTF-8, naming the field they are in', () => {
    const body = Buffer.concat([
      Buffer.from('[{"a":"ok"},{"name":"x'),
      Buffer.from([0xff]),
      Buffer.from('y"}]'),
    ]);
    expect(invalidsOf(body)).toEqual([
      { event: 1, field: 'name', reason: 'must be valid UTF-8', message: expect.any(String) },
    ]);
    // An encoded surrogate (CESU-8), an overlong form, a truncated sequence: each is not UTF-8.
    for (const bytes of [
      [0xed, 0xa0, 0x80],
      [0xc0, 0xaf],
      [0xe2, 0x82],
    ]) {
      const bad = Buffer.concat([Buffer.from('{"list":"a'), Buffer.from(bytes), Buffer.from('"}')]);
      expect(invalidsOf(bad)).toEqual([{ field: 'list', reason: 'must be valid UTF-8' }]);
    }
    const inKey = Buffer.concat([Buffer.from('{"k'), Buffer.from([0x80]), Buffer.from('":1}')]);
    expect(invalidsOf(inKey)).toEqual([{ field: 'k\ufffd', reason: expect.stringContaining('UTF-8') }]);
  });

  it('refuses a __proto__ key (plain or escaped) and constructor.prototype, naming them', () => {
    expect(invalidsOf('{"attributes":{"__proto__":{"x":1}}}')).toEqual([
      { field: 'attributes.__proto__', reason: 'is a reserved name' },
    ]);
    expect(invalidsOf('[{"a":1},{"\\u005f_proto__":1}]')).toEqual([
      { event: 1, field: '__proto__', reason: 'is a reserved name', message: expect.any(String) },
    ]);
    expect(invalidsOf('{"constructor":{"prototype":{"x":1}}}')).toEqual([
      { field: 'constructor.prototype', reason: 'is a reserved name' },
    ]);
    expect(parseJsonBody(Buffer.from('{"constructor":"c","prototype":"p"}'))).toEqual({
      constructor: 'c',
      prototype: 'p',
    });
  });

  it('answers bad JSON and an empty body with a message', () => {
    expect(messageOf('{broken')).toBe('request body is not valid JSON');
    expect(messageOf('')).toBe('request body is empty');
  });

  it('walks a body nested far deeper than the call stack allows, naming the field', () => {
    const depth = 20_000;
    const body = Buffer.concat([
      Buffer.from(`{"data":${'['.repeat(depth)}"a`),
      Buffer.from([0xff]),
      Buffer.from(`"${']'.repeat(depth)}}`),
    ]);
    const invalids = invalidsOf(body);
    expect(invalids).toHaveLength(1);
    expect(invalids[0]!.field).toBe(`data.${Array(depth).fill('0').join('.')}`);
    expect(invalids[0]!.reason).toBe('must be valid UTF-8');
  });
});
