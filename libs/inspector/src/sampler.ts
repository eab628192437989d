import type { InspectorNotice } from './inspector-entry.js';

/**
 * Every record while an account sends at most `bound` per second (per process); above that, one record in
 * `every` (a power of two, from the previous second's rate), and never more than `bound` in a second. A
 * record with a key (its request and index) is picked by the key, so the API and the processor, sampling
 * apart, pick the same records: a shown verdict gets its resolution. Switching in or out of sampling, or
 * changing its rate, yields a notice for the page.
 */
export class Sampler {
  private windowStart = 0;
  private inWindow = 0;
  private passedInWindow = 0;
  private every = 1;
  private seen = 0;

  constructor(
    private readonly bound: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether to pass the next record, the sampling rate, and a notice when the mode changed. `now`: the
   * records of one offer arrive at one instant, so the caller reads the clock once for them all.
   */
  take(key?: number, now = this.now()): { pass: boolean; every: number; notice?: InspectorNotice } {
    let notice: InspectorNotice | undefined;
    if (now - this.windowStart >= 1000) {
      const elapsed = Math.max(1, (now - this.windowStart) / 1000);
      const rate = this.windowStart === 0 ? 0 : this.inWindow / elapsed;
      const next = rate > this.bound ? 2 ** Math.ceil(Math.log2(rate / this.bound)) : 1;
      if (next !== this.every) notice = this.notice(next, Math.round(rate), now);
      this.every = next;
      this.windowStart = now;
      this.inWindow = 0;
      this.passedInWindow = 0;
    }
    this.inWindow++;
    if (this.passedInWindow >= this.bound) {
      // Over the bound within this second: nothing more until the next one, which samples.
      if (this.every === 1) {
        this.every = 2;
        notice = this.notice(2, this.inWindow, now);
      }
      return { pass: false, every: this.every, ...(notice ? { notice } : {}) };
    }
    const picked = key === undefined ? this.seen++ % this.every === 0 : key % this.every === 0;
    const pass = this.every === 1 || picked;
    if (pass) this.passedInWindow++;
    return { pass, every: this.every, ...(notice ? { notice } : {}) };
  }

  /**
   * Whether this second's bound is reached while sampling: every further record of the same instant is
   * refused, so a caller counts them with `skip` instead of taking them one by one.
   */
  get full(): boolean {
    return this.every > 1 && this.passedInWindow >= this.bound;
  }

  /** Counts `n` records refused because the window is full (what `take` would do for each). */
  skip(n: number): void {
    this.inWindow += n;
  }

  private notice(every: number, rate: number, now: number): InspectorNotice {
    const at = new Date(now).toISOString();
    if (every === 1) return { type: 'notice', at, message: 'showing every record again', sampling: null };
    return {
      type: 'notice',
      at,
      message:
        `more than ${this.bound} records per second (about ${rate}/s): ` +
        `showing a sample of 1 record in ${every}, at most ${this.bound} a second`,
      sampling: { every, bound: this.bound },
    };
  }
}

/** A record's sampling key: the same for the API's verdict and the processor's resolution of it. */
export function samplingKey(requestId: string, index: number): number {
  return (requestHash(requestId) + index) >>> 0;
}

/** The request's part of its records' sampling keys (FNV-1a of its id, without a `.<kind>` suffix). */
export function requestHash(requestId: string): number {
  const dot = requestId.indexOf('.'); // `<request id>.<kind>`: a v2 entities request of several kinds
  const end = dot < 0 ? requestId.length : dot;
  let hash = 0x811c9dc5;
  for (let i = 0; i < end; i++) hash = Math.imul(hash ^ requestId.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
