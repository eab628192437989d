import { randomUUID } from 'node:crypto';
import type { RedisCommands } from './redis-connection.js';

/** Extends a lock if this holder still has it. KEYS: lock; ARGV: owner, ms. Returns 1 when renewed. */
const RENEW_IF_OWNED = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/** Deletes a lock if this holder still has it. KEYS: lock; ARGV: owner. */
const RELEASE_IF_OWNED = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`;

/** How long a rebuild lock lasts unless renewed. */
export const REBUILD_LOCK_MS = 60 * 1000;

/**
 * The locks of the rebuilds one process runs (one per account and hot state): taken with SET NX, kept
 * alive while the rebuild runs (renewed every third of `lockMs`, however long the rebuild takes), so a
 * process that died mid-rebuild holds an account closed for at most `lockMs`. A renewal that finds the
 * lock gone (Redis flushed) stops; the rebuild's final step checks `owner` and fails then.
 */
export class RebuildLocks {
  readonly owner = randomUUID();
  private readonly renewals = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly redis: RedisCommands,
    readonly lockMs = REBUILD_LOCK_MS,
  ) {}

  /** Takes the lock and starts renewing it; false when another holder has it. */
  async acquire(key: string): Promise<boolean> {
    const locked = await this.redis.set(key, this.owner, {
      condition: 'NX',
      expiration: { type: 'PX', value: this.lockMs },
    });
    if (locked !== 'OK') return false;
    this.stopRenewing(key);
    const timer = setInterval(
      () => {
        this.redis
          .eval(RENEW_IF_OWNED, { keys: [key], arguments: [this.owner, String(this.lockMs)] })
          .then((renewed) => {
            if (Number(renewed) !== 1) this.stopRenewing(key);
          })
          .catch(() => undefined); // Redis away a moment: the next tick tries again, within the lock's life
      },
      Math.max(1, Math.floor(this.lockMs / 3)),
    );
    timer.unref();
    this.renewals.set(key, timer);
    return true;
  }

  /** Whether this process is renewing the lock (it acquired it and has not released it). */
  holds(key: string): boolean {
    return this.renewals.has(key);
  }

  stopRenewing(key: string): void {
    clearInterval(this.renewals.get(key));
    this.renewals.delete(key);
  }

  /** Stops renewing and deletes the lock if this process still has it. */
  async release(key: string): Promise<void> {
    this.stopRenewing(key);
    await this.redis.eval(RELEASE_IF_OWNED, { keys: [key], arguments: [this.owner] });
  }
}
