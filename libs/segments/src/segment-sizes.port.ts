import type { SegmentDefinition } from './segment.js';

export interface SegmentSizeRequest {
  account: string;
  definition: SegmentDefinition;
  /** Milliseconds since the epoch: the event windows end here. */
  now: number;
}

/**
 * How many of the account's customers a definition selects. Counted where the analytic store is: in
 * this process when it holds the store, or by the store's owner (the processor with chDB) over NATS.
 */
export abstract class SegmentSizes {
  abstract size(request: SegmentSizeRequest): Promise<number>;
}
