/**
 * Coalesces look-ups by key into one read per batch: keys asked for while a read is under way wait and
 * go together into the next. With a store that runs one query at a time (chDB), throughput then grows
 * with the batch instead of queueing one query per request behind the others.
 */
export class BatchedLoader<V> {
  private pending = new Map<string, { resolve: (v: V) => void; reject: (e: unknown) => void }[]>();
  private running = false;

  /** `read` answers for every key it is given (a key it leaves out gets `missing`). */
  constructor(
    private readonly read: (keys: string[]) => Promise<Map<string, V>>,
    private readonly missing: (key: string) => V,
    private readonly maxBatch = 500,
  ) {}

  load(key: string): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      const waiting = this.pending.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else this.pending.set(key, [{ resolve, reject }]);
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.size > 0) {
      const batch = new Map([...this.pending].slice(0, this.maxBatch));
      for (const key of batch.keys()) this.pending.delete(key);
      try {
        const found = await this.read([...batch.keys()]);
        for (const [key, waiting] of batch) {
          const value = found.get(key) ?? this.missing(key);
          for (const w of waiting) w.resolve(value);
        }
      } catch (err) {
        for (const waiting of batch.values()) for (const w of waiting) w.reject(err);
      }
    }
    this.running = false;
  }
}
