import type { InspectorEntry } from './inspector-entry.js';
import { Sampler, requestHash } from './sampler.js';

/** An open console's live view; `close` ends it (and, with the last view, the account's inspecting). */
export interface InspectorView {
  close(): void;
}

export type InspectorListener = (entry: InspectorEntry) => void;

/** Records per second per account and process shown whole before sampling (docs/configuration.md). */
export const DEFAULT_INSPECTOR_BOUND = 200;

/**
 * The event inspector's fan-out: the API offers request verdicts, the processor resolution outcomes; an
 * open console receives them. Inspecting is off for an account unless a console is open for it
 * somewhere: `offer` then costs one map lookup, and builds nothing. Publishing never waits and never
 * fails the request: the fan-out is not on the acknowledgement path.
 */
export abstract class Inspector {
  private readonly samplers = new Map<string, Sampler>();

  constructor(private readonly bound = DEFAULT_INSPECTOR_BOUND) {}

  /** Whether a console is open for this account (here or, scaled out, on any replica). Cheap. */
  abstract watching(account: string): boolean;

  /** Opens a live view of the account's entries; the account is inspected while a view is open. */
  abstract open(account: string, listener: InspectorListener): InspectorView;

  abstract close(): Promise<void>;

  /** Hands the entries to every open view of the account (fire and forget). */
  protected abstract send(account: string, entries: InspectorEntry[]): void;

  /**
   * Offers `count` entries for the account: each passes the account's sampler first, and only those that
   * pass are built (`make(index)`), so a sampled-out record costs a counter, and an unwatched account
   * nothing but the lookup.
   */
  offer(
    account: string,
    count: number,
    make: (index: number) => InspectorEntry,
    /** The records' request: sampling then picks the same records in the API and in the processor. */
    key?: (index: number) => { requestId: string; index: number },
  ): void {
    if (!this.watching(account)) return;
    let sampler = this.samplers.get(account);
    if (!sampler) this.samplers.set(account, (sampler = new Sampler(this.bound)));
    const out: InspectorEntry[] = [];
    // Per record, on an account that sends more than the bound: a hash step and a counter. The clock is
    // read once, a request's hash once for its run of records, and once this second's bound is reached
    // the rest are counted in one step.
    const now = Date.now();
    let lastRequest: string | undefined;
    let lastHash = 0;
    for (let index = 0; index < count; index++) {
      let sampleKey: number | undefined;
      const k = key?.(index);
      if (k) {
        if (k.requestId !== lastRequest) {
          lastRequest = k.requestId;
          lastHash = requestHash(k.requestId);
        }
        sampleKey = (lastHash + k.index) >>> 0;
      }
      const { pass, every, notice } = sampler.take(sampleKey, now);
      if (notice) out.push(notice);
      if (!pass) {
        if (sampler.full) {
          sampler.skip(count - index - 1);
          break;
        }
        continue;
      }
      const entry = make(index);
      out.push(every > 1 && entry.type === 'verdict' ? { ...entry, sampled_every: every } : entry);
    }
    if (out.length) this.send(account, out);
  }

  /** Forgets the samplers of accounts nobody watches any more (called as views close). */
  protected forget(account: string): void {
    this.samplers.delete(account);
  }
}
