import { failureOf } from './step-result.js';

/**
 * What both bus drivers do with a failed delivery. The rule (also in the README):
 *
 * 1. A deterministic failure (a StoreError whose engine code is in DETERMINISTIC_STORE_CODES: a value
 *    the store cannot parse; or an error saying `deterministic: true`: a rejected record) is dead-lettered
 *    at once — retrying cannot cure it. BusTransport decides this (failureOf, step-result.ts).
 * 2. Any other failure is transient and retried with capped exponential backoff. Only the failed
 *    message waits: every other message, its account's later ones included, keeps flowing. Order needs
 *    no hold: every piece of state a record writes is guarded by its place in acceptance order
 *    (`acceptanceOrder`, event-bus.port.ts), so a message stored late changes nothing newer.
 * 3. A transiently failing message is dead-lettered only once it has failed `maxStrikes` times while
 *    other messages were being stored (a strike: another message was acknowledged since this one's
 *    previous failure, or during its first attempt). While the cause is global — the store refuses every write — nothing is
 *    acknowledged, nothing strikes, and nothing acknowledged to a client is ever given up.
 * 4. When two or more different messages keep failing with nothing acknowledged in between, the store
 *    looks away: the consumer pauses with the same capped backoff instead of hammering it. Messages, not
 *    accounts: with no hold, one account's backlog (the usual deployment has one account) is as many
 *    messages failing side by side, each retried on its own backoff, and the whole backlog would be
 *    tried again every few seconds for as long as the store is away. One message failing alone (a bad
 *    one, or the only one) waits out its own backoff and pauses nothing.
 */

/** Whether the failure is dead-lettered at once (failureOf in step-result.ts holds the rule). */
export function isDeterministicFailure(err: unknown): boolean {
  return failureOf(err).type === 'dead-letter';
}

export interface RetryOptions {
  /** Strikes (failures while others succeed) before a transiently failing message is dead-lettered. */
  maxStrikes: number;
  /** First backoff; doubled on each failure up to `capMs`. */
  baseMs: number;
  capMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxStrikes: 5, baseMs: 200, capMs: 5000 };

interface Failing {
  firstFailedAt: number;
  failures: number;
  strikes: number;
  /** Acks counted when it last failed: more acks by its next failure make that failure a strike. */
  acksAtFailure: number;
}

export interface RetryDecision {
  deadLetter: boolean;
  /** How long the message waits before the next attempt. */
  delayMs: number;
  firstFailedAt: number;
  failures: number;
}

/** Keeps the per-message failure counts and the global failure streak of one consumer. */
export class RetryPolicy {
  private acks = 0;
  private readonly failing = new Map<string, Failing>();
  private streak = 0;
  /** Messages that failed since the last acknowledgement. */
  private failingSinceAck = new Set<string>();

  constructor(private readonly options: RetryOptions) {}

  /** Call when an attempt starts; pass the token back to `settled`. */
  attempt(): number {
    return this.acks;
  }

  backoff(n: number): number {
    return Math.min(this.options.baseMs * 2 ** Math.max(0, n - 1), this.options.capMs);
  }

  /**
   * Records a settled attempt: `acked` keys were stored, `retried` keys failed transiently. Returns a
   * decision per retried key and how long the whole consumer should pause (0: not at all).
   */
  settled(
    token: number,
    acked: readonly string[],
    retried: readonly { key: string; account: string }[],
  ): { decisions: Map<string, RetryDecision>; pauseMs: number } {
    const now = Date.now();
    for (const key of acked) this.failing.delete(key);
    this.acks += acked.length;
    if (acked.length) this.failingSinceAck.clear();
    const decisions = new Map<string, RetryDecision>();
    for (const { key } of retried) {
      const state = this.failing.get(key) ?? {
        firstFailedAt: now,
        failures: 0,
        strikes: 0,
        acksAtFailure: token,
      };
      state.failures++;
      if (this.acks > state.acksAtFailure) state.strikes++;
      state.acksAtFailure = this.acks;
      this.failing.set(key, state);
      this.failingSinceAck.add(key);
      const deadLetter = state.strikes >= this.options.maxStrikes;
      if (deadLetter) this.failing.delete(key);
      decisions.set(key, {
        deadLetter,
        delayMs: this.backoff(state.failures),
        firstFailedAt: state.firstFailedAt,
        failures: state.failures,
      });
    }
    let pauseMs = 0;
    if (acked.length === 0 && retried.length > 0 && this.failingSinceAck.size >= 2) {
      this.streak++;
      pauseMs = this.backoff(this.streak);
    } else if (acked.length > 0) {
      this.streak = 0;
    }
    return { decisions, pauseMs };
  }

  /** When the message first failed (now if it never did): a dead letter's "first failed at". */
  firstFailedAt(key: string): number {
    return this.failing.get(key)?.firstFailedAt ?? Date.now();
  }

  forget(key: string): void {
    this.failing.delete(key);
  }
}
