/**
 * Fault points: named places in the write path where a test makes the process fail or die, to prove
 * that a crash or a refusal between any two writes loses and doubles nothing. Production code calls
 * `faultPoint(name)` at each boundary; nothing is configured unless `CDP_TEST_FAULTS` (read by
 * @cdp/config) or a test says so, and then a call costs one Map lookup.
 *
 * A rule is `point[scope]:action[@N][~MS]`, rules separated by commas:
 * - `action` is `kill` (SIGKILL this process: a crash), `throw` (an InjectedFault: a refused write,
 *   transient — trying again may work) or `reject` (a RejectedFault: input that will fail the same way
 *   on every attempt, as a value the store cannot parse; it is `deterministic`);
 * - `[scope]` (optional) matches only calls that pass this scope, e.g. an account:
 *   `processor.message[acct_1]:reject~600000` rejects that account's messages for ten minutes;
 *   a rule without a scope matches every call of the point;
 * - `@N` fires on the Nth time the point is reached (default the first);
 * - `~MS` keeps firing for MS milliseconds from the first firing (a store that refuses writes a while).
 * A point name may end in `*` to match every point with that prefix (`store.insert.*`).
 */

export type FaultAction = 'kill' | 'throw' | 'reject';

export interface FaultRule {
  point: string;
  /** Only calls passing this scope (an account) match; undefined: every call. */
  scope?: string;
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

/**
 * The failure a `reject` rule raises: deterministic, like a record the store can never take, so the
 * processor dead-letters it at once instead of retrying.
 */
export class RejectedFault extends Error {
  override name = 'RejectedFault';
  readonly deterministic = true;
  constructor(
    readonly point: string,
    readonly scope?: string,
  ) {
    super(`injected rejection at ${point}${scope === undefined ? '' : `[${scope}]`}`);
  }
}

const RULE = /^([A-Za-z0-9_.*-]+)(?:\[([A-Za-z0-9_.:-]+)\])?:(kill|throw|reject)(?:@(\d+))?(?:~(\d+))?$/;

export function parseFaults(spec: string | undefined): FaultRule[] {
  if (!spec) return [];
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((text) => {
      const m = RULE.exec(text);
      if (!m) throw new Error(`fault rule "${text}" is not point[scope]:kill|throw|reject[@N][~MS]`);
      const rule: FaultRule = {
        point: m[1]!,
        action: m[3] as FaultAction,
        at: Number(m[4] ?? 1),
        forMs: Number(m[5] ?? 0),
      };
      if (m[2] !== undefined) rule.scope = m[2];
      return rule;
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

function matches(rule: FaultRule, point: string, scope: string | undefined): boolean {
  if (rule.scope !== undefined && rule.scope !== scope) return false;
  return rule.point.endsWith('*') ? point.startsWith(rule.point.slice(0, -1)) : rule.point === point;
}

/** A boundary of the write path: dies or throws here when a rule says so. `scope` narrows rules to one account. */
export function faultPoint(point: string, scope?: string): void {
  if (armed.length === 0) return;
  seen.set(point, (seen.get(point) ?? 0) + 1);
  for (const a of armed) {
    if (!matches(a.rule, point, scope)) continue;
    a.hits++;
    const now = clock();
    const firing =
      a.firstFiredAt === undefined
        ? a.hits === a.rule.at
        : a.rule.forMs > 0 && now - a.firstFiredAt < a.rule.forMs;
    if (!firing) continue;
    a.firstFiredAt ??= now;
    if (a.rule.action === 'kill') process.kill(process.pid, 'SIGKILL');
    if (a.rule.action === 'reject') throw new RejectedFault(point, scope);
    throw new InjectedFault(point);
  }
}
