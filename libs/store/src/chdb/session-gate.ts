/**
 * Who may use the chDB session now. chDB ends a session's streaming read when anything else runs in
 * the session while it streams — a query, a statement or an insert, started before or during it: "No
 * active streaming query" at the next chunk — and refuses a second stream. So a stream has the session
 * to itself (exclusive), everything else shares it; a waiting stream goes before calls that arrive
 * after it, so a busy write path cannot starve a rebuild. A stream's consumer must not call the store
 * while it reads (it would wait for itself); the rebuilds' consumers load hot state only.
 */
export class SessionGate {
  private sharing = 0;
  private streaming = false;
  private streamsWaiting = 0;
  private waiters: (() => void)[] = [];
  /** Calls and streams holding the session or waiting for it. */
  private users = 0;

  /** Whether a stream holds the session or waits for it: a call given the session now would wait. */
  reserved(): boolean {
    return this.streaming || this.streamsWaiting > 0;
  }

  /** How many calls and streams hold the session or wait for it. */
  load(): number {
    return this.users;
  }

  async shared<T>(call: () => Promise<T>): Promise<T> {
    this.users++;
    try {
      while (this.streaming || this.streamsWaiting > 0) await this.turn();
      this.sharing++;
      try {
        return await call();
      } finally {
        this.sharing--;
        this.wake();
      }
    } finally {
      this.users--;
    }
  }

  /** Takes the session for a stream; call the returned function when the stream ends. */
  async exclusive(): Promise<() => void> {
    this.users++;
    this.streamsWaiting++;
    try {
      while (this.streaming || this.sharing > 0) await this.turn();
    } finally {
      this.streamsWaiting--;
    }
    this.streaming = true;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.streaming = false;
      this.users--;
      this.wake();
    };
  }

  private turn(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    for (const resume of this.waiters.splice(0)) resume();
  }
}
