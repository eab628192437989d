import {
  GraphQLBoolean,
  GraphQLError,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  type GraphQLFieldConfigArgumentMap,
} from 'graphql';
import { NAMED_IDENTIFIERS } from '@cdp/domain';
import type { AudienceState, RecentEvent, Segment } from '@cdp/segments';

/** What every resolver can reach: the caller and the reads it may make. */
export interface GraphqlContext {
  account: string;
  private: boolean;
  /** The customer found by these identifiers, or an INVALID_IDENTIFIER_EXCEPTION error. */
  customer(args: Record<string, unknown>): Promise<ResolvedCustomer>;
  segments(): Promise<Segment[]>;
  lists(): Promise<{ list_id: string; name: string; created_at: string }[]>;
}

export interface ResolvedCustomer {
  /** The hot profile, read on the first call. */
  attributes(): Promise<Readonly<Record<string, unknown>>>;
  audiences(subset: readonly string[] | undefined): Promise<{ segment: Segment; state: AudienceState }[]>;
  /** The customer's latest events (its merged customers' included), newest first. */
  events(first: number): Promise<RecentEvent[]>;
}

/** `events(first:)`: at most this many a query asks for (one customer's latest, read from the store). */
export const MAX_EVENTS = 100;
const DEFAULT_EVENTS = 10;

/** The error a private-key field answers a public key with. */
function privateOnly(ctx: GraphqlContext, field: string): void {
  if (!ctx.private)
    throw new GraphQLError(`${field} needs the private key; the public key reads audiences only`, {
      extensions: { code: 'FORBIDDEN', classification: 'DataFetchingException' },
    });
}

/** Attributes as one JSON object: customer fields differ per account (custom fields). */
const JSONObject = new GraphQLScalarType({
  name: 'JSONObject',
  description: 'a JSON object',
  serialize: (v) => v,
});

const Audience = new GraphQLObjectType({
  name: 'Audience',
  fields: {
    name: { type: new GraphQLNonNull(GraphQLString), description: "the segment's id" },
    state: { type: new GraphQLNonNull(GraphQLString), description: 'qualified or not_qualified' },
    description: { type: GraphQLString },
    title: { type: GraphQLString, description: "the segment's display name" },
  },
});
const AudienceEdge = new GraphQLObjectType({
  name: 'AudienceEdge',
  fields: { node: { type: new GraphQLNonNull(Audience) } },
});
const AudienceConnection = new GraphQLObjectType({
  name: 'AudienceConnection',
  fields: { edges: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(AudienceEdge))) } },
});

const Event = new GraphQLObjectType({
  name: 'Event',
  fields: {
    event_id: { type: new GraphQLNonNull(GraphQLString) },
    type: { type: new GraphQLNonNull(GraphQLString) },
    action: { type: new GraphQLNonNull(GraphQLString) },
    ts: { type: new GraphQLNonNull(GraphQLString), description: 'ISO 8601, UTC' },
    channel: { type: GraphQLString },
    identifiers: { type: JSONObject },
    data: { type: JSONObject, description: "the event's fields that have a value, and its order" },
  },
});
const EventEdge = new GraphQLObjectType({
  name: 'EventEdge',
  fields: { node: { type: new GraphQLNonNull(Event) } },
});
const EventConnection = new GraphQLObjectType({
  name: 'EventConnection',
  fields: { edges: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(EventEdge))) } },
});

const Customer = new GraphQLObjectType<ResolvedCustomer, GraphqlContext>({
  name: 'Customer',
  fields: {
    audiences: {
      type: new GraphQLNonNull(AudienceConnection),
      args: {
        subset: { type: new GraphQLList(GraphQLString), description: 'segment ids; absent: every segment' },
      },
      resolve: async (customer, args: { subset?: (string | null)[] | null }) => {
        const subset = args.subset?.filter((s): s is string => typeof s === 'string');
        const states = await customer.audiences(subset);
        return {
          edges: states.map(({ segment, state }) => ({
            node: { name: segment.id, state, description: segment.description, title: segment.name },
          })),
        };
      },
    },
    events: {
      type: new GraphQLNonNull(EventConnection),
      description: `the latest events, newest first (private key); first: 1–${MAX_EVENTS}, default ${DEFAULT_EVENTS}`,
      args: { first: { type: GraphQLInt, defaultValue: DEFAULT_EVENTS } },
      resolve: async (customer, args: { first?: number | null }, ctx) => {
        privateOnly(ctx, 'events');
        const first = args.first ?? DEFAULT_EVENTS;
        if (first < 1 || first > MAX_EVENTS)
          throw new GraphQLError(`events(first:) takes 1 to ${MAX_EVENTS}; ${first} is out of range`, {
            extensions: { code: 'BAD_USER_INPUT', classification: 'ValidationError' },
          });
        return { edges: (await customer.events(first)).map((node) => ({ node })) };
      },
    },
    attributes: {
      type: JSONObject,
      description: 'the profile (private key)',
      resolve: (customer, _args, ctx) => {
        privateOnly(ctx, 'attributes');
        return customer.attributes();
      },
    },
  },
});

const Segment_ = new GraphQLObjectType({
  name: 'Segment',
  fields: {
    id: { type: new GraphQLNonNull(GraphQLString) },
    name: { type: new GraphQLNonNull(GraphQLString) },
    description: { type: GraphQLString },
    definition: { type: JSONObject },
  },
});
const List = new GraphQLObjectType({
  name: 'List',
  fields: {
    list_id: { type: new GraphQLNonNull(GraphQLString) },
    name: { type: new GraphQLNonNull(GraphQLString) },
    created_at: { type: GraphQLString },
  },
});

/**
 * The schema of an account: `customer` takes every built-in identifier and the account's custom ones
 * (GraphQL arguments are declared, so the schema is built per set of identifier names, and cached).
 */
export function buildSchema(customIdentifiers: readonly string[]): GraphQLSchema {
  const args: GraphQLFieldConfigArgumentMap = {};
  for (const name of [...NAMED_IDENTIFIERS, ...customIdentifiers]) args[name] = { type: GraphQLString };
  return new GraphQLSchema({
    query: new GraphQLObjectType<unknown, GraphqlContext>({
      name: 'Query',
      fields: {
        customer: {
          type: Customer,
          args,
          resolve: (_root, a: Record<string, unknown>, ctx) => ctx.customer(a),
        },
        segments: {
          type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Segment_))),
          resolve: (_root, _a, ctx) => {
            privateOnly(ctx, 'segments');
            return ctx.segments();
          },
        },
        lists: {
          type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(List))),
          resolve: (_root, _a, ctx) => {
            privateOnly(ctx, 'lists');
            return ctx.lists();
          },
        },
        ok: { type: GraphQLBoolean, resolve: () => true },
      },
    }),
  });
}
