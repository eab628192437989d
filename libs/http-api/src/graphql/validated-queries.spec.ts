import { parse, specifiedRules, validate } from 'graphql';
import { boundedQuery } from './graphql-limits.js';
import { buildSchema } from './graphql-schema.js';
import { shapeOf, ValidatedQueries } from './validated-queries.js';

const SDK = (id: string) =>
  `query {customer(fs_user_id : "${id}") {audiences(subset: ["cart_abandoners", "vips"]) {edges {node {name state}}}}}`;

describe('ValidatedQueries', () => {
  it("keys the SDK's query by its shape: the pasted user id, escapes included, does not matter", () => {
    expect(shapeOf(SDK('a-1'))).toBe(shapeOf(SDK('someone else \\" with a quote')));
    expect(shapeOf(SDK('a-1'))).not.toBe(shapeOf(SDK('a-1').replace('fs_user_id', 'vuid')));
    // Comments and block strings could hide a quote: such queries are validated every time.
    expect(shapeOf(`${SDK('a')} # "`)).toBeUndefined();
    expect(shapeOf(SDK('a').replace('"a"', '"""a"""'))).toBeUndefined();
  });

  it('remembers only what validated, per schema', () => {
    const remembered = new ValidatedQueries();
    remembered.remember('', SDK('a'));
    expect(remembered.has('', SDK('b'))).toBe(true);
    expect(remembered.has('loyalty_id', SDK('b'))).toBe(false);
    expect(remembered.has('', SDK('b').replace('state', 'nope'))).toBe(false);
  });

  it('gives queries of one shape one validation outcome (string literals are never read by the rules)', () => {
    const schema = buildSchema([]);
    const outcome = (q: string) =>
      validate(schema, parse(q), [...specifiedRules, boundedQuery]).map((e) => e.message);
    const pairs = [
      [SDK('a'), SDK('')],
      [
        '{customer(email: "x") {events(first: 5) {edges {node {type}}}}}',
        '{customer(email: "yy") {events(first: 5) {edges {node {type}}}}}',
      ],
      ['{customer(email: "x", vuid: "v") {attributes}}', '{customer(email: "", vuid: "") {attributes}}'],
      ['{customer(email: 3) {attributes}}', '{customer(email: 4) {attributes}}'],
    ];
    for (const [a, b] of pairs) {
      expect(shapeOf(a!) === shapeOf(b!)).toBe(!a!.includes(': 3'));
      if (shapeOf(a!) === shapeOf(b!)) expect(outcome(a!)).toEqual(outcome(b!));
    }
  });
});
