import { Tracker, type TrackerOptions } from './tracker.js';

type Call = [string, unknown[]];
interface Stub {
  q?: Call[];
}

const METHODS = ['event', 'customer', 'entity', 'consent', 'subscribe', 'unsubscribe', 'anonymize', 'flush'];

/**
 * The script-tag build: `window.svc`. The snippet's stub queued calls as `[method, args]` in `svc.q`;
 * they are replayed in order. Calls before `initialize` wait for it. The platform's address defaults
 * to the origin this script was loaded from.
 */
function install(win: Window & { svc?: Stub }): void {
  const script = win.document.currentScript as HTMLScriptElement | null;
  const origin = script?.src ? new URL(script.src).origin : undefined;
  const queued: Call[] = win.svc?.q ?? [];
  const early: Call[] = [];
  let tracker: Tracker | undefined;
  const svc: Record<string, (...args: unknown[]) => unknown> = {
    initialize(options: unknown) {
      if (tracker) return;
      const given = (typeof options === 'string' ? { trackerId: options } : options) as TrackerOptions;
      tracker = new Tracker(win, { apiHost: origin, ...given });
      for (const [method, args] of early.splice(0)) svc[method]!(...args);
    },
    getVuid: () => tracker?.getVuid(),
  };
  for (const method of METHODS)
    svc[method] = (...args: unknown[]) =>
      tracker
        ? (tracker[method as 'event'] as (...a: unknown[]) => unknown).apply(tracker, args)
        : early.push([method, args]);
  win.svc = svc;
  for (const [method, args] of queued) svc[method]?.(...args);
}

install(window);
