/**
 * The segment body's pipe, for the console's Segments page (libs/console-api), which creates and edits
 * segments with `POST|PUT /v3/segments`'s own checks and errors.
 */
export { SegmentBodyPipe } from './segment.dto.js';
