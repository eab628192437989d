import { gzipSync } from 'node:zlib';
import fc from 'fast-check';

/**
 * Requests generated from the OpenAPI document: for every path + method, valid-ish requests built from
 * its schemas (body, path and query parameters, headers), and deliberately broken variants of them.
 * A request's free strings carry its token (`fz<seq>k`), so a store scan can tell whose data landed.
 */

// A JSON schema from the document, read field by field: its shape is whatever the document holds.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Schema = Record<string, any>;
export type OpenApiDoc = { paths: Record<string, Record<string, Schema>>; components?: Schema };

export interface Operation {
  method: string;
  path: string;
  route: string;
  op: Schema;
}

/** Accounts, keys and ids the generator draws valid values from. */
export interface FuzzFixtures {
  adminToken: string;
  main: { publicKey: string; privateKey: string };
  /** An account on the spec's default rates (profiles 10/s, compliance 1/s). */
  limited: { publicKey: string; privateKey: string };
  /** Valid-ish values of path parameters by route-qualified name (`/admin…:id`) or plain name. */
  pathValues: Record<string, string[]>;
  listIds: string[];
  objectNames: string[];
}

export interface FuzzRequest {
  seq: number;
  route: string;
  /** What was done to the request, for the report. */
  variant: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Buffer;
  token: string;
}

export function operationsOf(doc: OpenApiDoc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const inlined = inlineRefs(op, doc, 0) as Schema;
      ops.push({ method: method.toUpperCase(), path, route: `${method.toUpperCase()} ${path}`, op: inlined });
    }
  }
  return ops;
}

/**
 * The operation with every `$ref` (`#/components/schemas/…`, what DTO classes generate) replaced by
 * the schema it points to, so that the generator reads one self-contained schema per body.
 */
function inlineRefs(value: unknown, doc: OpenApiDoc, depth: number): unknown {
  if (Array.isArray(value)) return value.map((v) => inlineRefs(v, doc, depth));
  if (typeof value !== 'object' || value === null) return value;
  const ref = (value as Schema).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) {
    if (depth > 8) return {};
    const target = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((at, key) => (at as Schema | undefined)?.[key], doc);
    return inlineRefs(target, doc, depth + 1);
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inlineRefs(v, doc, depth)]));
}

/** What the document leaves undescribed: a body without a JSON schema of objects, a query without schema. */
export function documentGaps(doc: OpenApiDoc): string[] {
  const gaps: string[] = [];
  for (const { route, op, method } of operationsOf(doc)) {
    const schema = op.requestBody?.content?.['application/json']?.schema as Schema | undefined;
    if (['POST', 'PUT', 'PATCH'].includes(method) && op.requestBody && !isDescriptive(schema))
      gaps.push(`${route}: request body has no schema of its fields`);
  }
  return gaps;
}

function isDescriptive(schema: Schema | undefined): boolean {
  if (!schema) return false;
  if (schema.oneOf || schema.anyOf) return (schema.oneOf ?? schema.anyOf).some(isDescriptive);
  if (schema.type === 'array') return isDescriptive(schema.items);
  return (
    schema.type === 'object' && (schema.properties !== undefined || schema.additionalProperties !== undefined)
  );
}

// ---------------------------------------------------------------------------------------------
// Placeholders: generated values are plain JSON; strings holding these markers are replaced in the
// serialised text, so that a request can carry its token and raw text JSON.stringify cannot produce.

const TOKEN = '~T~';
const RAW = (i: number) => `@@RAW${i}@@`;

const tokStr = fc.string({ maxLength: 10, unit: 'grapheme-ascii' }).map((s) => `${TOKEN}${s}`);
const tokEmail = fc.stringMatching(/^[a-z0-9]{1,8}$/).map((s) => `${TOKEN}${s}@example.com`);
const tokId = fc.stringMatching(/^[a-z0-9_-]{0,8}$/).map((s) => `${TOKEN}${s}`);

/** Property names whose valid values the schemas cannot tell (identifiers, times, ids). */
function hintFor(name: string, fx: FuzzFixtures): fc.Arbitrary<unknown> | undefined {
  switch (name) {
    case 'identifiers':
      return fc.oneof(
        fc.record({ vuid: tokId }),
        fc.record({ email: tokEmail }),
        fc.record({ customer_id: tokId }, { requiredKeys: ['customer_id'] }),
        fc.record({ vuid: tokId, email: tokEmail, customer_id: tokId }, { requiredKeys: ['vuid'] }),
        fc.record({ svc_alias_cart: tokId }),
      );
    case 'email':
      return tokEmail;
    case 'vuid':
    case 'customer_id':
    case 'product_id':
    case 'order_id':
    case 'requester':
      return tokId;
    case 'ts':
      return fc.oneof(
        fc.integer({ min: 1_500_000_000, max: 1_900_000_000 }),
        fc.constantFrom('2024-03-05T10:11:12Z', '2024-03-05', '2025-01-01T00:00:00+02:00'),
      );
    case 'list_id':
      return fc.constantFrom(...fx.listIds, 'svc_all');
    case 'child_object':
    case 'object':
      return fc.constantFrom(...fx.objectNames);
    case 'fields':
      return undefined;
    case 'gender':
      return fc.constantFrom('M', 'F');
    case 'country':
      return fc.constantFrom('NOR', 'USA', 'DEU');
    case 'tracker_id':
      return fc.stringMatching(/^[A-Za-z0-9_-]{8,16}$/);
    case 'phone':
      return fc.stringMatching(/^\+4[0-9]{8}$/);
    default:
      return undefined;
  }
}

/** An arbitrary of values valid for `schema` (as far as a JSON schema says), small and bounded. */
export function fromSchema(
  schema: Schema | undefined,
  name: string,
  fx: FuzzFixtures,
  depth = 0,
): fc.Arbitrary<unknown> {
  if (!schema || Object.keys(schema).length === 0) return depth > 2 ? tokStr : smallJson;
  const hint = hintFor(name, fx);
  if (hint) return hint;
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((s) => fromSchema(s, name, fx, depth)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object':
      return objectOf(schema, fx, depth);
    case 'array': {
      const min = schema.minItems ?? 0;
      return fc.array(fromSchema(schema.items, name, fx, depth + 1), {
        minLength: min,
        maxLength: Math.max(min, Math.min(schema.maxItems ?? 3, 3)),
      });
    }
    case 'string':
      if (schema.format === 'email') return tokEmail;
      if (schema.pattern)
        return fc
          .stringMatching(new RegExp(schema.pattern))
          .filter((s) => s.length <= (schema.maxLength ?? 64));
      return schema.minLength
        ? tokStr
        : fc.oneof({ arbitrary: tokStr, weight: 9 }, { arbitrary: fc.constant(''), weight: 1 });
    case 'integer':
      return fc.integer({ min: schema.minimum ?? 0, max: 100_000 });
    case 'number':
      return fc.double({ min: 0, max: 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return smallJson;
  }
}

const smallJson: fc.Arbitrary<unknown> = fc.oneof(
  tokStr,
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.dictionary(fc.stringMatching(/^[a-z_]{1,8}$/), tokStr, { maxKeys: 3 }),
);

/** An object: its required properties, some optional ones, and extras where the schema allows them. */
function objectOf(schema: Schema, fx: FuzzFixtures, depth: number): fc.Arbitrary<unknown> {
  // `allOf: [{if: {properties: {type: {const}}}, then: {...}}]`: one variant per discriminator value.
  const conditionals = ((schema.allOf ?? []) as Schema[]).filter((s) => s.if && s.then);
  if (conditionals.length) {
    const base = { ...schema };
    delete base.allOf;
    return fc.oneof(
      ...conditionals.map((c) => {
        const [discriminator, constant] = Object.entries(c.if.properties as Record<string, Schema>)[0]!;
        return objectOf(
          {
            ...base,
            properties: {
              ...base.properties,
              ...c.then.properties,
              [discriminator]: { const: constant.const },
            },
          },
          fx,
          depth,
        );
      }),
    );
  }
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = ((schema.required ?? []) as string[]).filter((k) => k in properties);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, prop] of Object.entries(properties)) model[key] = fromSchema(prop, key, fx, depth + 1);
  const known = fc.record(model, { requiredKeys: required });
  const patterns = Object.keys((schema.patternProperties ?? {}) as Schema);
  const extraKeys =
    patterns.length > 0
      ? fc.constantFrom('svc_alias_cart', 'ios_push_tokens', 'favourite_colour')
      : schema.additionalProperties
        ? fc.stringMatching(/^[a-z][a-z_]{0,10}$/)
        : undefined;
  if (!extraKeys) return known;
  const extraValue =
    typeof schema.additionalProperties === 'object'
      ? fromSchema(schema.additionalProperties, '', fx, depth + 1)
      : tokStr;
  return fc
    .tuple(known, fc.dictionary(extraKeys, extraValue, { maxKeys: 2 }))
    .map(([k, extra]) => ({ ...extra, ...(k as object) }));
}

// ---------------------------------------------------------------------------------------------
// Broken variants.

const VALUE_MUTATIONS = [
  'wrong-type',
  'drop-key',
  'extra-field',
  'number-edge',
  'nan-string',
  'long-string',
  'empty-value',
  'big-array',
  'unicode',
  'deep-nesting',
  'proto-key',
  'duplicate-key',
  'raw-number',
] as const;
const BYTE_MUTATIONS = [
  'truncate',
  'garbage',
  'json-syntax',
  'invalid-utf8',
  'empty-body',
  'large-body',
] as const;

const WRONG_TYPES: unknown[] = [123, -1, 'str', true, false, null, [], {}, [1, 'a'], { a: 1 }, 0.5];
const NUMBER_EDGES = [0, -1, -0, 1e308, -1e308, 2 ** 53 + 1, 1.5, 1e-7, 4294967296, -2147483649, 0.999];
const NAN_STRINGS = [
  'NaN',
  'Infinity',
  '-Infinity',
  '1e400',
  '0x10',
  '',
  ' ',
  'null',
  'undefined',
  '-0',
  '1,5',
  '٣',
];
const UNICODE = [
  '\u0000',
  'a\u0000b',
  '\u202e\u202d',
  '\ufeff',
  '\u200b\u200d',
  'Z̴̡̧͓a̷l̵g̷o',
  '💩👨‍👩‍👧',
  '\u2028\u2029',
  'é',
  '\uffff',
  '\ud800',
  '\udc00x',
  'a\ud83d',
];
const RAW_NUMBERS = ['1E+2', '-0.0', '123456789012345678901234567890', '1e-400', '0.0000', '1e400', '-1e400'];
const SYNTAX_BREAKS = [
  (s: string) => s.replace(/}\s*$/, ',}'),
  (s: string) => s.replace(/"/g, "'"),
  (s: string) => `${s}${s}`,
  (s: string) => `\ufeff${s}`,
  (s: string) => `/* c */${s}`,
  () => 'NaN',
  () => 'null',
  () => 'true',
  () => '"a string"',
  () => '[]',
  () => '0',
  () => '   ',
  () => '{"a":}',
  () => '{"a" 1}',
  () => '{,}',
  () => '[1,2,]',
  () => '{"a":"\\x41"}',
  () => '{"a":"\\u12"}',
  () => '{"a":undefined}',
];
const INVALID_UTF8 = [
  Buffer.from([0xff]),
  Buffer.from([0xc3, 0x28]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xc0, 0xaf]),
];

interface ValueMutation {
  kind: (typeof VALUE_MUTATIONS)[number];
  pick: number;
  choice: number;
  size: number;
}
interface ByteMutation {
  kind: (typeof BYTE_MUTATIONS)[number];
  pick: number;
  choice: number;
}

const valueMutation: fc.Arbitrary<ValueMutation> = fc.record({
  kind: fc.constantFrom(...VALUE_MUTATIONS),
  pick: fc.nat(),
  choice: fc.nat(),
  size: fc.nat({ max: 5000 }),
});
const byteMutation: fc.Arbitrary<ByteMutation> = fc.record({
  kind: fc.constantFrom(...BYTE_MUTATIONS),
  pick: fc.nat(),
  choice: fc.nat(),
});

/** A value in a generated body, with the container holding it (objects and arrays both index by key). */
type Container = Record<string | number, unknown>;
type Node = { parent: Container; key: string | number; value: unknown };

function nodesOf(root: { v: unknown }): Node[] {
  const out: Node[] = [];
  const walk = (parent: Container, key: string | number, value: unknown) => {
    out.push({ parent, key, value });
    if (value && typeof value === 'object')
      for (const [k, v] of Object.entries(value))
        walk(value as Container, Array.isArray(value) ? Number(k) : k, v);
  };
  walk(root, 'v', root.v);
  return out;
}

/** Applies a value mutation in place on `root.v`; raw insertions go to `raws` (see RAW). */
function mutateValue(root: { v: unknown }, m: ValueMutation, raws: string[]): void {
  const nodes = nodesOf(root);
  const node = nodes[m.pick % nodes.length]!;
  const set = (v: unknown) => (node.parent[node.key] = v);
  const raw = (text: string) => {
    raws.push(text);
    return RAW(raws.length - 1);
  };
  const objects = nodes.filter((n) => n.value && typeof n.value === 'object' && !Array.isArray(n.value));
  const objectNode = objects.length ? objects[m.pick % objects.length]! : undefined;
  const leaves = nodes.filter((n) => n.value === null || typeof n.value !== 'object');
  const leaf = leaves.length ? leaves[m.pick % leaves.length]! : node;
  const setLeaf = (v: unknown) => (leaf.parent[leaf.key] = v);
  switch (m.kind) {
    case 'wrong-type':
      return void set(WRONG_TYPES[m.choice % WRONG_TYPES.length]);
    case 'drop-key': {
      if (!objectNode) return void set(undefined);
      const keys = Object.keys(objectNode.value as object);
      if (keys.length) delete (objectNode.value as Record<string, unknown>)[keys[m.choice % keys.length]!];
      return;
    }
    case 'extra-field':
      if (objectNode)
        (objectNode.value as Record<string, unknown>)[`fuzz_extra_${m.choice % 7}`] = smallValue(m.choice);
      return;
    case 'number-edge':
      return void setLeaf(NUMBER_EDGES[m.choice % NUMBER_EDGES.length]);
    case 'nan-string':
      return void setLeaf(NAN_STRINGS[m.choice % NAN_STRINGS.length]);
    case 'long-string':
      return void setLeaf(`${TOKEN}${'x'.repeat([1025, 1024 - 3, 70_000, 300_000][m.choice % 4]!)}`);
    case 'empty-value':
      return void set([[], {}, '', null][m.choice % 4]);
    case 'big-array': {
      const length = 1001 + (m.size % 300);
      // Either the whole body as a batch of over 1000 records, or one value as an array that long.
      if (node.parent === root || m.choice % 2 === 0) {
        const item = root.v;
        root.v = Array.from({ length }, () => item);
      } else set(Array.from({ length }, () => node.value));
      return;
    }
    case 'unicode':
      return void setLeaf(`${TOKEN}${UNICODE[m.choice % UNICODE.length]}`);
    case 'deep-nesting': {
      const depth = [50, 300, 1000, 5000][m.choice % 4]!;
      const nested =
        m.size % 2 ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      return void set(raw(nested));
    }
    case 'proto-key': {
      const target = objectNode?.value ?? root.v;
      if (!target || typeof target !== 'object' || Array.isArray(target))
        return void set(raw('{"__proto__":{"polluted":1}}'));
      const key = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString'][m.choice % 5]!;
      const value = ['{"polluted":1}', '{"prototype":{"polluted":1}}', 'null', '1', '"x"'][m.size % 5]!;
      (target as Record<string, unknown>)[raw(JSON.stringify(key)).replace(/^/, '')] = raw(value);
      return;
    }
    case 'duplicate-key': {
      const target = objectNode?.value as Record<string, unknown> | undefined;
      if (!target) return;
      const keys = Object.keys(target);
      if (!keys.length) return;
      const key = keys[m.choice % keys.length]!;
      target[raw(JSON.stringify(key))] = smallValue(m.size);
      return;
    }
    case 'raw-number':
      return void setLeaf(raw(RAW_NUMBERS[m.choice % RAW_NUMBERS.length]!));
  }
}

function smallValue(n: number): unknown {
  return [`${TOKEN}extra`, 42, true, null, [1, 2], { nested: `${TOKEN}x` }][n % 6];
}

/** JSON text of `value` with its raw insertions and the request's token in place. */
function serialise(value: unknown, raws: string[], token: string): string {
  let text = JSON.stringify(value) ?? '';
  // A raw key is a JSON string `"@@RAWn@@"`; a raw value the same string: both replaced with the raw text.
  text = text.replace(/"@@RAW(\d+)@@"/g, (_m, i: string) => raws[Number(i)]!);
  return text.replaceAll(TOKEN, token);
}

function mutateBytes(body: Buffer, m: ByteMutation): Buffer {
  switch (m.kind) {
    case 'truncate':
      return body.subarray(0, body.length ? m.pick % body.length : 0);
    case 'garbage':
      return Buffer.from(Array.from({ length: 1 + (m.pick % 64) }, (_, i) => (m.choice * 31 + i * 97) % 256));
    case 'json-syntax':
      return Buffer.from(SYNTAX_BREAKS[m.choice % SYNTAX_BREAKS.length]!(body.toString('utf8')));
    case 'invalid-utf8': {
      // Inside the first string value, so that only the encoding is wrong.
      const at = body.indexOf('"', body.indexOf(':')) + 1;
      if (at <= 0) return Buffer.concat([body, INVALID_UTF8[m.choice % INVALID_UTF8.length]!]);
      return Buffer.concat([
        body.subarray(0, at),
        INVALID_UTF8[m.choice % INVALID_UTF8.length]!,
        body.subarray(at),
      ]);
    }
    case 'empty-body':
      return Buffer.alloc(0);
    case 'large-body': {
      // Valid JSON padded with spaces: 1 MiB, or just over the 8 MiB limit (413).
      const size = m.choice % 4 !== 0 ? 1024 * 1024 : 8 * 1024 * 1024 + 1;
      return Buffer.concat([body, Buffer.alloc(Math.max(0, size - body.length), 0x20)]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Headers, path and query.

type KeyChoice =
  'public' | 'private' | 'limited-public' | 'limited-private' | 'invalid' | 'empty' | 'missing' | 'long';
const keyChoice = fc.oneof(
  { arbitrary: fc.constant<KeyChoice>('private'), weight: 12 },
  { arbitrary: fc.constant<KeyChoice>('public'), weight: 3 },
  { arbitrary: fc.constantFrom<KeyChoice>('limited-public', 'limited-private'), weight: 2 },
  { arbitrary: fc.constantFrom<KeyChoice>('invalid', 'empty', 'missing', 'long'), weight: 2 },
);
type AdminChoice = 'valid' | 'wrong' | 'missing' | 'bare' | 'basic';
const adminChoice = fc.oneof(
  { arbitrary: fc.constant<AdminChoice>('valid'), weight: 8 },
  { arbitrary: fc.constantFrom<AdminChoice>('wrong', 'missing', 'bare', 'basic'), weight: 2 },
);

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  '',
  'application/jsonp',
  'application/json; charset=utf-16',
  '*/*',
  'application/xml',
];
const contentType = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 30 },
  { arbitrary: fc.constantFrom('application/json; charset=utf-8', 'APPLICATION/JSON'), weight: 2 },
  { arbitrary: fc.constantFrom(...CONTENT_TYPES), weight: 2 },
);
type Encoding = 'none' | 'gzip' | 'x-gzip' | 'gzip-broken' | 'gzip-truncated' | 'br' | 'deflate' | 'double';
const encoding = fc.oneof(
  { arbitrary: fc.constant<Encoding>('none'), weight: 30 },
  { arbitrary: fc.constantFrom<Encoding>('gzip', 'x-gzip'), weight: 3 },
  {
    arbitrary: fc.constantFrom<Encoding>('gzip-broken', 'gzip-truncated', 'br', 'deflate', 'double'),
    weight: 2,
  },
);

const HOSTILE_SEGMENTS = [
  '..',
  '..%2F..%2Fadmin%2Fv1%2Faccounts',
  '%2e%2e%2f',
  '%2F',
  'a%2Fb',
  '%00',
  'a%00b',
  '%ZZ',
  '%',
  '%C0%AF',
  '%ED%A0%80',
  '%F0%9F%92%A9',
  'x'.repeat(3000),
  '%20',
  encodeURIComponent('ünï'),
  '__proto__',
  'constructor',
  '%E2%80%AE',
  'null',
];
const HOSTILE_QUERY_VALUES = [
  '',
  '%00',
  '..%2F',
  'x'.repeat(5000),
  '%E2%80%AE',
  '%FF',
  '%ZZ',
  'null',
  'anonymous',
  '%F0%9F%92%A9',
];

/** A path parameter's values: the fixtures' valid ones first, random and hostile ones besides. */
function pathParam(path: string, name: string, fx: FuzzFixtures): fc.Arbitrary<string> {
  const scoped = Object.entries(fx.pathValues).find(
    ([k]) => k.includes(':') && path.startsWith(k.split(':')[0]!) && k.endsWith(`:${name}`),
  );
  const valid = scoped?.[1] ?? fx.pathValues[name] ?? [];
  return fc.oneof(
    { arbitrary: valid.length ? fc.constantFrom(...valid) : tokId, weight: 6 },
    { arbitrary: tokId.map((s) => encodeURIComponent(s.replaceAll(TOKEN, 'p'))), weight: 2 },
    { arbitrary: fc.constantFrom(...HOSTILE_SEGMENTS), weight: 2 },
  );
}

function queryOf(op: Schema, fx: FuzzFixtures): fc.Arbitrary<[string, string][]> {
  const names = ((op.parameters ?? []) as Schema[])
    .filter((p) => p.in === 'query')
    .map((p) => p.name as string);
  const value = (name: string) =>
    fc.oneof(
      {
        arbitrary: (hintFor(name.replace('svc_alias_NAME', 'vuid'), fx) ?? tokId).map((v) =>
          encodeURIComponent(String(v)),
        ),
        weight: 6,
      },
      { arbitrary: fc.constantFrom(...HOSTILE_QUERY_VALUES), weight: 2 },
    );
  const pairs = names.map((n) =>
    fc.tuple(fc.constant(n === 'svc_alias_NAME' ? 'svc_alias_cart' : n), value(n), fc.nat({ max: 9 })),
  );
  const junk = fc.constantFrom<[string, string]>(
    ['__proto__', 'x'],
    ['constructor[prototype][a]', '1'],
    ['email[]', 'a%40b.c'],
    ['email[a]', 'b'],
    ['unknown', 'x'],
    ['', 'x'],
    ['a', ''],
  );
  return fc
    .tuple(
      fc.subarray(pairs.length ? [...Array(pairs.length).keys()] : []),
      fc.tuple(...pairs),
      fc.option(junk, { freq: 5 }),
    )
    .map(([chosen, generated, extra]) => {
      const out: [string, string][] = [];
      for (const i of chosen) {
        const [name, v, repeat] = generated[i]!;
        out.push([name, v]);
        if (repeat === 0) out.push([name, v]); // a repeated parameter reaches the route as an array
      }
      if (extra) out.push(extra);
      return out;
    });
}

interface Plan {
  key: KeyChoice;
  admin: AdminChoice;
  body: unknown;
  value?: ValueMutation;
  bytes?: ByteMutation;
  contentType: string;
  encoding: Encoding;
  params: string[];
  query: [string, string][];
  /** A GET or DELETE with a body anyway. */
  strayBody: boolean;
}

/** The arbitrary of one operation's requests; `build` turns a plan into bytes with its token. */
export function requestsOf(operation: Operation, fx: FuzzFixtures): fc.Arbitrary<Plan> {
  const { op, path } = operation;
  const bodySchema = op.requestBody?.content?.['application/json']?.schema as Schema | undefined;
  const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  return fc.record({
    key: keyChoice,
    admin: adminChoice,
    body: bodySchema ? fromSchema(bodySchema, '', fx) : fc.constant(undefined),
    // About half the requests are broken in their body, the rest valid-ish (most of the other
    // variants, of headers, path and query, are refused too).
    value: fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 13 },
      { arbitrary: valueMutation, weight: 7 },
    ),
    bytes: fc.oneof({ arbitrary: fc.constant(undefined), weight: 9 }, { arbitrary: byteMutation, weight: 1 }),
    contentType,
    encoding,
    params: params.length ? fc.tuple(...params.map((p) => pathParam(path, p, fx))) : fc.constant([]),
    query: queryOf(op, fx),
    strayBody: fc.nat({ max: 19 }).map((n) => n === 0),
  });
}

export function build(operation: Operation, plan: Plan, fx: FuzzFixtures, seq: number): FuzzRequest {
  const token = `fz${seq}k`;
  const variant: string[] = [];
  let url = operation.path;
  const params = [...operation.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  params.forEach((name, i) => (url = url.replace(`{${name}}`, plan.params[i]!.replaceAll(TOKEN, token))));
  if (plan.query.length)
    url += '?' + plan.query.map(([k, v]) => `${k}=${v.replaceAll(TOKEN, token)}`).join('&');

  const headers: Record<string, string> = {};
  const admin = operation.path.startsWith('/admin/');
  const v2 = operation.path.startsWith('/v2/');
  const needsKey = ((operation.op.parameters ?? []) as Schema[]).some((p) => p.in === 'header');
  if (admin) {
    const auth = {
      valid: `Bearer ${fx.adminToken}`,
      wrong: 'Bearer nope',
      missing: '',
      bare: 'Bearer ',
      basic: 'Basic YTpi',
    }[plan.admin];
    if (auth) headers.authorization = auth;
    if (plan.admin !== 'valid') variant.push(`admin:${plan.admin}`);
  } else if (needsKey) {
    const key = {
      public: fx.main.publicKey,
      private: fx.main.privateKey,
      'limited-public': fx.limited.publicKey,
      'limited-private': fx.limited.privateKey,
      invalid: 'not-a-key',
      empty: '',
      missing: undefined,
      long: 'k'.repeat(10_000),
    }[plan.key];
    if (key !== undefined) headers[v2 ? 'svc-tracker-id' : 'x-api-key'] = key;
    if (!['public', 'private'].includes(plan.key)) variant.push(`key:${plan.key}`);
  }

  const hasBody = ['POST', 'PUT', 'PATCH'].includes(operation.method) || plan.strayBody;
  let body: Buffer | undefined;
  if (hasBody) {
    const root = { v: structuredClone(plan.body ?? { [`${TOKEN}stray`]: 1 }) };
    const raws: string[] = [];
    if (plan.value) {
      mutateValue(root, plan.value, raws);
      variant.push(plan.value.kind);
    }
    body = Buffer.from(serialise(root.v, raws, token));
    if (plan.bytes) {
      body = mutateBytes(body, plan.bytes);
      variant.push(plan.bytes.kind);
    }
    if (plan.contentType) headers['content-type'] = plan.contentType;
    if (plan.contentType !== 'application/json') variant.push(`ct:${plan.contentType || 'none'}`);
    body = encode(body, plan.encoding, headers);
    if (plan.encoding !== 'none') variant.push(`ce:${plan.encoding}`);
    if (plan.strayBody && !['POST', 'PUT', 'PATCH'].includes(operation.method)) variant.push('stray-body');
  }
  return {
    seq,
    route: operation.route,
    variant: variant.join('+') || 'valid-ish',
    method: operation.method,
    url,
    headers,
    body,
    token,
  };
}

function encode(body: Buffer, how: Encoding, headers: Record<string, string>): Buffer {
  switch (how) {
    case 'none':
      return body;
    case 'gzip':
    case 'x-gzip':
      headers['content-encoding'] = how;
      return gzipSync(body);
    case 'gzip-broken':
      headers['content-encoding'] = 'gzip';
      return body;
    case 'gzip-truncated': {
      headers['content-encoding'] = 'gzip';
      const zipped = gzipSync(body);
      return zipped.subarray(0, Math.max(1, zipped.length >> 1));
    }
    case 'br':
    case 'deflate':
      headers['content-encoding'] = how;
      return body;
    case 'double':
      headers['content-encoding'] = 'gzip, gzip';
      return gzipSync(gzipSync(body));
  }
}

/** `perRoute` requests of every operation, reproducible from `seed`. */
export function generate(doc: OpenApiDoc, fx: FuzzFixtures, seed: number, perRoute: number): FuzzRequest[] {
  let seq = 0;
  const out: FuzzRequest[] = [];
  operationsOf(doc).forEach((operation, i) => {
    const plans = fc.sample(requestsOf(operation, fx), { seed: seed + i, numRuns: perRoute });
    for (const plan of plans) out.push(build(operation, plan, fx, seq++));
  });
  return out;
}
