import { randomUUID } from 'node:crypto';
import type { RejectionCount } from './reads/console-store-reads.js';

/** A reason is cut to this many characters: the counts are about kinds of problems, not their values. */
export const MAX_REASON_LENGTH = 200;
const MAX_TYPE_LENGTH = 64;
/**
 * Distinct (outcome, type, reason) an account keeps per minute; the rest add up under OTHER_TYPES and
 * OTHER_REASONS (both: a type is the sender's own text too, so a new type per record must not grow it).
 */
export const MAX_KEYS_PER_MINUTE = 100;
export const OTHER_REASONS = 'other reasons';
export const OTHER_TYPES = 'other types';

/** One refused (or trimmed) record, as the tap reads it off an answer. */
export interface Refusal {
  outcome: RejectionCount['outcome'];
  type: string;
  reason: string;
}

/**
 * The rejection counts of this process since the last flush, summed in memory per account, minute,
 * outcome, type and reason: a request adds to a map and writes nothing, and a flush hands a few rows per
 * account to the store. Bounded per account and minute (MAX_KEYS_PER_MINUTE), so a sender inventing a
 * new reason per record cannot grow it.
 */
export class RejectionTally {
  /** account → minute → key → count */
  private readonly counts = new Map<string, Map<number, Map<string, RejectionCount>>>();

  add(account: string, at: number, refusals: readonly Refusal[]): void {
    if (refusals.length === 0) return;
    const minute = Math.floor(at / 60_000) * 60_000;
    const keys = this.keysOf(account, minute);
    for (const r of refusals)
      this.count(keys, {
        minute,
        outcome: r.outcome,
        type: r.type.slice(0, MAX_TYPE_LENGTH),
        reason: r.reason.slice(0, MAX_REASON_LENGTH),
        records: 1,
      });
  }

  /**
   * Adds to the minute's counts; past MAX_KEYS_PER_MINUTE distinct keys, a new one is counted under one
   * overflow key per outcome (OTHER_TYPES, OTHER_REASONS), so the minute holds at most the limit plus one.
   */
  private count(keys: Map<string, RejectionCount>, c: RejectionCount): void {
    let { type, reason } = c;
    let key = `${c.outcome}\u0000${type}\u0000${reason}`;
    if (!keys.has(key) && keys.size >= MAX_KEYS_PER_MINUTE - 1) {
      type = OTHER_TYPES;
      reason = OTHER_REASONS;
      key = `${c.outcome}\u0000${type}\u0000${reason}`;
    }
    const held = keys.get(key);
    if (held) held.records += c.records;
    else keys.set(key, { ...c, type, reason });
  }

  /** Everything counted so far, per account, and forgets it. */
  drain(): Map<string, RejectionCount[]> {
    const out = new Map<string, RejectionCount[]>();
    for (const [account, minutes] of this.counts)
      out.set(
        account,
        [...minutes.values()].flatMap((keys) => [...keys.values()]),
      );
    this.counts.clear();
    return out;
  }

  private keysOf(account: string, minute: number): Map<string, RejectionCount> {
    let minutes = this.counts.get(account);
    if (!minutes) {
      minutes = new Map<number, Map<string, RejectionCount>>();
      this.counts.set(account, minutes);
    }
    let keys = minutes.get(minute);
    if (!keys) {
      keys = new Map<string, RejectionCount>();
      minutes.set(minute, keys);
    }
    return keys;
  }

  get empty(): boolean {
    return this.counts.size === 0;
  }
}

/** One account's counts on their way to the store, under the id that makes a resend stored once. */
export interface RejectionBatch {
  id: string;
  account: string;
  counts: RejectionCount[];
}

/**
 * What a flush sends: the batches a failed flush kept, again under their own ids (a flush whose answer
 * was lost may have been stored: the same id makes the store keep it once), then the tally's new counts
 * under new ids. A kept batch is let go once its newest minute is a day old (the overview reads a day at
 * most).
 */
export class RejectionOutbox {
  private kept: RejectionBatch[] = [];

  constructor(private readonly tally: RejectionTally) {}

  get empty(): boolean {
    return this.kept.length === 0 && this.tally.empty;
  }

  take(now: number): RejectionBatch[] {
    const kept = this.kept.filter((b) => b.counts.some((c) => c.minute >= now - 86_400_000));
    this.kept = [];
    const fresh = [...this.tally.drain()].map(([account, counts]) => ({ id: randomUUID(), account, counts }));
    return [...kept, ...fresh];
  }

  /** A batch the store did not take: sent again, unchanged, with the next flush. */
  failed(batch: RejectionBatch): void {
    this.kept.push(batch);
  }
}
