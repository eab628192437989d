import type { Consumer, JsMsg } from '@nats-io/jetstream';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The shared pull consumer's messages, each the moment it arrives. A pull request is kept open while
 * fewer than `limit` messages are held here, and the processor takes whatever has arrived.
 *
 * Why not hand over each request's messages when it completes: a request completes when it has all its
 * messages or when it expires (a second at least: the client refuses less), so under light traffic a
 * lone message waited up to a second for company — most of the 202 → visible time at half the peak
 * rate. Under load the queue fills while the processor works, and the next take is a full batch.
 */
export class Arrivals {
  private readonly queue: JsMsg[] = [];
  /** The taker waiting for a message, and the pump waiting for room. */
  private wakeTaker: (() => void) | undefined;
  private wakePump: (() => void) | undefined;
  private stopping = false;
  private readonly pumping: Promise<void>;

  constructor(
    private readonly source: Consumer,
    private readonly limit: number,
    private readonly expiresMs: number,
    private readonly onError: (err: unknown) => void,
  ) {
    this.pumping = this.pump();
  }

  /** The messages held and not yet taken (they are claimed from JetStream and must keep their claim). */
  held(): readonly JsMsg[] {
    return this.queue;
  }

  /**
   * Waits for a message, lets the messages that arrive in the same moment join it (one turn of the
   * event loop: a burst read from the socket is delivered message by message), and returns all held.
   * Empty once stopping: what is held then goes back with `stop`.
   */
  async take(): Promise<JsMsg[]> {
    while (this.queue.length === 0 && !this.stopping) await new Promise<void>((r) => (this.wakeTaker = r));
    await new Promise((r) => setImmediate(r));
    if (this.stopping) return [];
    const taken = this.queue.splice(0);
    this.wake('pump');
    return taken;
  }

  /** Stops taking at once (a waiting `take` returns empty); `stop` then ends the pump. */
  interrupt(): void {
    this.stopping = true;
    this.wake('taker');
    this.wake('pump');
  }

  /**
   * Ends the pump (its open request runs out first, so nothing the server sends meanwhile is left
   * unanswered) and returns what was held, for the caller to send back.
   */
  async stop(): Promise<JsMsg[]> {
    this.interrupt();
    await this.pumping;
    return this.queue.splice(0);
  }

  private wake(who: 'taker' | 'pump'): void {
    const wake = who === 'taker' ? this.wakeTaker : this.wakePump;
    if (who === 'taker') this.wakeTaker = undefined;
    else this.wakePump = undefined;
    wake?.();
  }

  private async pump(): Promise<void> {
    while (!this.stopping) {
      const room = this.limit - this.queue.length;
      if (room <= 0) {
        await new Promise<void>((r) => (this.wakePump = r));
        continue;
      }
      try {
        const messages = await this.source.fetch({ max_messages: room, expires: this.expiresMs });
        for await (const m of messages) {
          this.queue.push(m);
          this.wake('taker');
        }
      } catch (err) {
        if (this.stopping) return;
        // JetStream away (restart, network): keep trying; unacknowledged messages wait in the stream.
        this.onError(err);
        await sleep(500);
      }
    }
  }
}
