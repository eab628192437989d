import type { EventBus } from '@cdp/bus';

/** How long the loader waits before looking at the bus's backlog again. */
const RECHECK_MS = 20;

/**
 * Keeps a publisher at most about `maxAheadRecords` records ahead of the processors. The bus's backlog
 * is looked at once every half-allowance of messages (it may cost a round trip), and while it is above
 * the allowance the publisher waits; a bus that cannot tell its backlog is not waited for.
 */
export class BacklogPace {
  private readonly everyMessages: number;
  private readonly maxAheadMessages: number;
  private sinceCheck = 0;

  constructor(
    private readonly bus: Pick<EventBus, 'backlog'>,
    maxAheadRecords: number,
    recordsPerMessage: number,
  ) {
    this.maxAheadMessages = Math.max(1, Math.ceil(maxAheadRecords / recordsPerMessage));
    this.everyMessages = Math.max(1, Math.floor(this.maxAheadMessages / 2));
  }

  /** Resolves when one more message may be published. */
  async wait(signal: AbortSignal): Promise<void> {
    if (++this.sinceCheck < this.everyMessages) return;
    this.sinceCheck = 0;
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const backlog = await this.bus.backlog().catch(() => undefined);
      if (!backlog || backlog.pending + backlog.inFlight <= this.maxAheadMessages) return;
      await new Promise((r) => setTimeout(r, RECHECK_MS));
    }
  }
}
