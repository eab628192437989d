import type { Filter } from '@cdp/exports';

/** A segment's id: what the GraphQL `subset` and the Optimizely datafile's audiences name. */
export const SEGMENT_ID = /^[a-z][a-z0-9_]*$/;
export const MAX_SEGMENT_ID_LENGTH = 64;
/** Per account: every GraphQL lookup evaluates the segments it is asked about, at most this many. */
export const MAX_SEGMENTS = 100;
export const MAX_EVENT_CONDITIONS = 20;
export const MAX_WITHIN_DAYS = 365;

/**
 * The customer's events of `type` (and `action`, when given) in the last `within_days` days, counted:
 * the condition holds when the count is within [min_count, max_count]. Neither bound given means "at
 * least once" (min_count 1); max_count alone means "at most that many" (0: never).
 */
export interface EventCondition {
  type: string;
  action?: string;
  within_days: number;
  min_count?: number;
  max_count?: number;
}

/** A conjunction: the customer filter (the exports API's grammar, over customer fields) and every event condition. */
export interface SegmentDefinition {
  customer?: Filter;
  events?: EventCondition[];
}

export interface Segment {
  id: string;
  name: string;
  description: string;
  definition: SegmentDefinition;
  created_at: string;
  updated_at: string;
}

/** The bounds a condition's count must fall within. */
export function countBounds(c: EventCondition): { min: number; max: number } {
  const min = c.min_count ?? (c.max_count === undefined ? 1 : 0);
  return { min, max: c.max_count ?? Number.POSITIVE_INFINITY };
}
