import { Tracker, type TrackerOptions } from './tracker.js';

export { Tracker, type TrackerOptions, type ConsentOptions } from './tracker.js';
export type { SubscribeOptions } from './validation.js';

/** The SDK as an ES module: `const svc = createTracker({trackerId, apiHost})`, then `svc.event('pageview')`. */
export function createTracker(options: TrackerOptions, win: Window = window): Tracker {
  return new Tracker(win, options);
}
