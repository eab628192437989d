import type { RejectionCount } from './reads/console-store-reads.js';

/** A reason is cut to this many characters: the counts are about kinds of problems, not their values. */
export const MAX_REASON_LENGTH = 200;
const MAX_TYPE_LENGTH = 64;
/** Distinct (outcome, type, reason) an account keeps per minute; the rest add up under OTHER_REASONS. */
export const MAX_KEYS_PER_MINUTE = 100;
export const OTHER_REASONS = 'other reasons';

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
    for (const r of refusals) {
      const type = r.type.slice(0, MAX_TYPE_LENGTH);
      let reason = r.reason.slice(0, MAX_REASON_LENGTH);
      let key = `${r.outcome}\u0000${type}\u0000${reason}`;
      if (!keys.has(key) && keys.size >= MAX_KEYS_PER_MINUTE - 1) {
        reason = OTHER_REASONS;
        key = `${r.outcome}\u0000${type}\u0000${reason}`;
      }
      const count = keys.get(key);
      if (count) count.records += 1;
      else keys.set(key, { minute, outcome: r.outcome, type, reason, records: 1 });
    }
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

  /**
   * Counts a failed flush gives back, to go with the next one; those older than a day are let go (the
   * store has been away that long: the overview reads a day at most).
   */
  restore(account: string, counts: readonly RejectionCount[], now: number): void {
    for (const c of counts) {
      if (c.minute < now - 86_400_000) continue;
      const keys = this.keysOf(account, c.minute);
      const key = `${c.outcome}\u0000${c.type}\u0000${c.reason}`;
      const held = keys.get(key);
      if (held) held.records += c.records;
      else keys.set(key, { ...c });
    }
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
