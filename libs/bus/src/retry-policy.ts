import { failureOf } from './step-result.js';

/**
 * What both bus drivers do with a failed delivery. The rule (also in the README):
 *
 * 1. A deterministic failure (a StoreError whose engine code is in DETERMINISTIC_STORE_CODES: a value
 *    the store cannot parse; or an error saying `deterministic: true`: a rejected record) is dead-lettered
 *    at once — retrying cannot cure it. BusTransport decides this (failureOf, step-result.ts).
 * 2. Any other failure is transient and retried with capped exponential backoff. Only the failed
 *    message's account waits: its later messages are held back behind it (profiles are last-write-wins
 *    in arrival order, so they must not overtake it), while every other account keeps flowing.
 * 3. A transiently failing message is dead-lettered only once it has failed `maxStrikes` times while
 *    other messages were being stored (a strike: another message was acknowledged since this one's
 *    previous failure, or during its first attempt). While the cause is global — the store refuses every write — nothing is
 *    acknowledged, nothing strikes, and nothing acknowledged to a client is ever given up.
 * 4. When batches keep failing for two or more accounts with nothing acknowledged in between, the store
 *    looks away: the consumer pauses with the same capped backoff instead of hammering it.
 */

/**
 * A batch handed over while the one before it was being written, and that one failed: it wrote nothing,
 * and is tried again whole once the failed batch's messages have been retried, so that an account's
 * later message never overtakes its earlier one that failed.
 */
export class PrecededByFailure extends Error {
  override name = 'PrecededByFailure';
  constructor() {
    super('the batch before this one failed; this one is tried again after it');
  }
}

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
  /** How long the message (and its account) waits before the next attempt. */
  delayMs: number;
  firstFailedAt: number;
  failures: number;
}

/** Keeps the per-message failure counts and the global failure streak of one consumer. */
export class RetryPolicy {
  private acks = 0;
  private readonly failing = new Map<string, Failing>();
  private streak = 0;
  private failingAccounts = new Set<string>();

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
    if (acked.length) this.failingAccounts.clear();
    const decisions = new Map<string, RetryDecision>();
    for (const { key, account } of retried) {
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
      this.failingAccounts.add(account);
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
    if (acked.length === 0 && retried.length > 0 && this.failingAccounts.size >= 2) {
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

/**
 * Accounts waiting for a failed message: the account's oldest held message goes again when its backoff
 * ends; its later messages wait until that one is settled. Sequence numbers order an account's messages.
 */
const NONE: ReadonlySet<number> = new Set();

export class AccountHolds {
  /** Per account: each held message's sequence, the moment it may go again, and how long past that it is kept. */
  private readonly holds = new Map<string, Map<number, { until: number; staleAfterMs: number }>>();

  constructor(
    /** A hold whose message never came back this long after its time is dropped (another consumer took it). */
    private readonly staleAfterMs = 60_000,
  ) {}

  get size(): number {
    return this.holds.size;
  }

  /**
   * Holds a message until `until`. `staleAfterMs` (default: the constructor's) bounds how long its account
   * waits for it past that: a message sent back only to keep its place behind a failed one is given a
   * short one, since if it does not come back on time it was settled elsewhere, and its account must not
   * wait a minute for it.
   */
  hold(account: string, seq: number, until: number, staleAfterMs = this.staleAfterMs): void {
    const held = this.holds.get(account) ?? new Map<number, { until: number; staleAfterMs: number }>();
    held.set(seq, { until, staleAfterMs });
    this.holds.set(account, held);
  }

  release(account: string, seq: number): void {
    const held = this.holds.get(account);
    if (!held) return;
    held.delete(seq);
    if (held.size === 0) this.holds.delete(account);
  }

  /**
   * 0 when the message may be delivered now; otherwise how long it should wait at least. A held message
   * of the account with a lower sequence blocks it, unless that one is `going` (handed over already, or
   * earlier in the same batch: a batch is processed in order, and fails as a whole).
   */
  waitMs(account: string, seq: number, now = Date.now(), going: ReadonlySet<number> = NONE): number {
    const held = this.holds.get(account);
    if (!held) return 0;
    let blocker: number | undefined;
    for (const [s, { until, staleAfterMs }] of held) {
      if (now > until + staleAfterMs) {
        held.delete(s); // its message never came back: another consumer took it
        continue;
      }
      if (s < seq && !going.has(s) && (blocker === undefined || s < blocker)) blocker = s;
    }
    if (held.size === 0) this.holds.delete(account);
    // Behind an earlier held message of its account: wait at least until that one goes again.
    if (blocker !== undefined) return Math.max(held.get(blocker)!.until - now, 0) + 100;
    const own = held.get(seq);
    return own ? Math.max(0, own.until - now) : 0;
  }

  /** The soonest moment a held message may go again (undefined: nothing held). */
  nextRelease(): number | undefined {
    let soonest: number | undefined;
    for (const held of this.holds.values()) {
      let first = Infinity;
      for (const s of held.keys()) first = Math.min(first, s);
      const { until } = held.get(first)!;
      soonest = soonest === undefined ? until : Math.min(soonest, until);
    }
    return soonest;
  }
}
