import {
  conditionHolds,
  countBounds,
  type EventCondition,
  type EventTally,
  type MemberDefinition,
} from '@cdp/exports';

/** A segment's id: what the GraphQL `subset` and the Optimizely datafile's audiences name. */
export const SEGMENT_ID = /^[a-z][a-z0-9_]*$/;
export const MAX_SEGMENT_ID_LENGTH = 64;
/** Per account: every GraphQL lookup evaluates the segments it is asked about, at most this many. */
export const MAX_SEGMENTS = 100;
export const MAX_EVENT_CONDITIONS = 20;
export const MAX_WITHIN_DAYS = 365;

/** A segment's definition is a member definition: the customer filter and every event condition. */
export type SegmentDefinition = MemberDefinition;
export { conditionHolds, countBounds, type EventCondition, type EventTally };

export interface Segment {
  id: string;
  name: string;
  description: string;
  definition: SegmentDefinition;
  created_at: string;
  updated_at: string;
}
