/**
 * Fault points: named places in the write path where a test makes the process fail or die, to prove
 * that a crash or a refusal between any two writes loses and doubles nothing. Production code calls
 * `faultPoint(name)` at each boundary; nothing is configured unless `CDP_TEST_FAULTS` (read by
 * @cdp/config) or a test says so, and then a call costs one Map lookup.
 *
 * A rule is `point:action[@N][~MS]`, rules separated by commas:
 * - `action` is `kill` (SIGKILL this process: a crash) or `throw` (an InjectedFault: a refused write);
 * - `@N` fires on the Nth time the point is reached (default the first);
 * - `~MS` keeps firing for MS milliseconds from the first firing (a store that refuses writes a while).
 * A point name may end in `*` to match every point with that prefix (`store.insert.*`).
 */

export type FaultAction = 'kill' | 'throw';

export interface FaultRule {
  point: string;
  action: FaultAction;
  /** Fires on this hit (1-based). */
  at: number;
  /** Keeps firing this long after the first firing; 0: fires once. */
  forMs: number;
}

/** The failure a `throw` rule raises; transient, like a store that is briefly away. */
export class InjectedFault extends Error {
  override name = 'InjectedFault';
  constructor(readonly point: string) {
    super(`injected fault at ${point}`);
  }
}

const RULE = /^([A-Za-z0-9_.*-]+):(kill|throw)(?:@(\d+))?(?:~(\d+))?$/;

export function parseFaults(spec: string | undefined): FaultRule[] {
  if (!spec) return [];
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((text) => {
      const m = RULE.exec(text);
      if (!m) throw new Error(`fault rule "${text}" is not point:kill|throw[@N][~MS]`);
      return { point: m[1]!, action: m[2] as FaultAction, at: Number(m[3] ?? 1), forMs: Number(m[4] ?? 0) };
    });
}

interface Armed {
  rule: FaultRule;
  hits: number;
  firstFiredAt: number | undefined;
}

let armed: Armed[] = [];
/** Hits seen per point while any rule is armed: tests read them to learn the boundaries a path crossed. */
const seen = new Map<string, number>();
let clock: () => number = Date.now;

/** Arms these rules (replacing any before); an empty list disarms every point. */
export function configureFaults(rules: readonly FaultRule[], now: () => number = Date.now): void {
  armed = rules.map((rule) => ({ rule, hits: 0, firstFiredAt: undefined }));
  seen.clear();
  clock = now;
}

/** How often each point was reached since the rules were last configured. */
export function faultPointHits(): ReadonlyMap<string, number> {
  return seen;
}

function matches(rule: FaultRule, point: string): boolean {
  return rule.point.endsWith('*') ? point.startsWith(rule.point.slice(0, -1)) : rule.point === point;
}

/** A boundary of the write path: dies or throws here when a rule says so. */
export function faultPoint(point: string): void {
  if (armed.length === 0) return;
  seen.set(point, (seen.get(point) ?? 0) + 1);
  for (const a of armed) {
    if (!matches(a.rule, point)) continue;
    a.hits++;
    const now = clock();
    const firing =
      a.firstFiredAt === undefined
        ? a.hits === a.rule.at
        : a.rule.forMs > 0 && now - a.firstFiredAt < a.rule.forMs;
    if (!firing) continue;
    a.firstFiredAt ??= now;
    if (a.rule.action === 'kill') process.kill(process.pid, 'SIGKILL');
    throw new InjectedFault(point);
  }
}
