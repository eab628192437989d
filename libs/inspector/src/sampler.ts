import type { InspectorNotice } from './inspector-entry.js';

/**
 * Every record while an account sends fewer than `bound` per second (per process); above that, one
 * record in `every`, where `every` follows the previous second's rate. Switching in or out of sampling,
 * or changing its rate, yields a notice for the page to show.
 */
export class Sampler {
  private windowStart = 0;
  private inWindow = 0;
  private every = 1;
  private seen = 0;

  constructor(
    private readonly bound: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether to pass the next record, its sampling rate, and a notice when the mode changed. */
  take(): { pass: boolean; every: number; notice?: InspectorNotice } {
    const now = this.now();
    let notice: InspectorNotice | undefined;
    if (now - this.windowStart >= 1000) {
      const elapsed = Math.max(1, (now - this.windowStart) / 1000);
      const rate = this.windowStart === 0 ? 0 : this.inWindow / elapsed;
      const next = rate > this.bound ? Math.ceil(rate / this.bound) : 1;
      if (next !== this.every) notice = this.notice(next, Math.round(rate), now);
      this.every = next;
      this.windowStart = now;
      this.inWindow = 0;
    }
    this.inWindow++;
    // Within a window, the first `bound` records always pass: a burst after a quiet time is seen whole.
    if (this.every === 1 && this.inWindow > this.bound) {
      this.every = 2;
      notice = this.notice(2, this.inWindow, now);
    }
    const pass = this.every === 1 || this.seen++ % this.every === 0;
    return { pass, every: this.every, ...(notice ? { notice } : {}) };
  }

  private notice(every: number, rate: number, now: number): InspectorNotice {
    const at = new Date(now).toISOString();
    if (every === 1) return { type: 'notice', at, message: 'showing every record again', sampling: null };
    return {
      type: 'notice',
      at,
      message:
        `more than ${this.bound} records per second (about ${rate}/s): ` +
        `showing a sample of 1 record in ${every}`,
      sampling: { every, bound: this.bound },
    };
  }
}
