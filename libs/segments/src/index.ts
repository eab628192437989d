export * from './segment.js';
export * from './event-counts.port.js';
export * from './audiences.js';
export { matchesFilter } from './customer-filter.js';
export { StoreSegmentEventCounts } from './store-event-counts.js';
export { DigestedSegmentEventCounts, DIGEST_REFRESH_MS } from './digested-event-counts.js';
export { EventDigests } from './event-digests.js';
export * from './segment-sizes.port.js';
export * from './recent-events.port.js';
export { StoreRecentEvents } from './store-recent-events.js';
export { StoreSegmentSizes } from './store-segment-sizes.js';
export {
  SegmentsService,
  SEGMENTS_CACHE_MS,
  type SegmentInput,
  type SegmentSize,
} from './segments.service.js';
export { SegmentsModule } from './segments.module.js';
