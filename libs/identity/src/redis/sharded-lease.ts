import { randomUUID } from 'node:crypto';
import type { RedisCommands } from '@cdp/redis';

/** How long an account's lease lasts unless renewed (renewed every third of it while a batch runs). */
export const LEASE_MS = 30_000;

/**
 * Takes the lease if nobody holds it, bumping the account's fencing epoch. KEYS: lease, epoch counter;
 * ARGV: owner, ms. Returns the epoch, 0 when held by another.
 */
const TAKE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. epoch, 'PX', ARGV[2])
return epoch`;
/** KEYS: lease; ARGV: value, ms (0: release). */
const KEEP = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '0' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`;

export interface Lease {
  key: string;
  /** `<owner>:<epoch>`: what the lease key holds while this holder has it. */
  value: string;
  epoch: number;
  timer?: NodeJS.Timeout;
}

/**
 * The per-account lease of the sharded identity index: one batch of an account at a time, and every
 * holder a new fencing epoch, so a holder whose lease ran out (paused, partitioned) cannot write over
 * what the next holder did: shard writes carry the epoch and a shard refuses one older than it saw.
 */
export class AccountLeases {
  private readonly owner = randomUUID();

  constructor(
    private readonly redis: RedisCommands,
    readonly leaseMs = LEASE_MS,
  ) {}

  /** Takes the lease, waiting while another holds it (at most two lease lives); renews it until released. */
  async acquire(key: string, epochKey: string): Promise<Lease> {
    const deadline = Date.now() + 2 * this.leaseMs + 5000;
    for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
      const epoch = Number(
        await this.redis.eval(TAKE, { keys: [key, epochKey], arguments: [this.owner, String(this.leaseMs)] }),
      );
      if (epoch > 0) {
        const lease: Lease = { key, value: `${this.owner}:${epoch}`, epoch };
        lease.timer = setInterval(
          () => {
            this.keep(lease, this.leaseMs).catch(() => undefined); // the next tick tries again
          },
          Math.max(1, Math.floor(this.leaseMs / 3)),
        );
        lease.timer.unref();
        return lease;
      }
      if (Date.now() > deadline) throw new Error(`the identity lease ${key} stayed taken`);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /** Stops renewing: what a holder that dies leaves behind (the lease runs out by itself). */
  abandon(lease: Lease): void {
    clearInterval(lease.timer);
  }

  async release(lease: Lease): Promise<void> {
    this.abandon(lease);
    await this.keep(lease, 0);
  }

  private async keep(lease: Lease, ms: number): Promise<boolean> {
    const kept = await this.redis.eval(KEEP, { keys: [lease.key], arguments: [lease.value, String(ms)] });
    return Number(kept) === 1;
  }
}

/** Raised when a shard or the account refuses a write: a newer lease holder has written since. */
export class FencedError extends Error {
  override name = 'FencedError';
}

/**
 * One fenced, replay-safe write on one shard. KEYS: the shard's fence, then the step's done marker
 * (absent for a write that is not a step); ARGV: epoch, marker TTL in s, the writes (JSON: ['h', key, field, value] | ['s', key, value] |
 * ['e', key, value] (a SET that expires with the markers) | ['x', key]). Refuses an epoch older than the fence; skips a step whose marker is there (done before a
 * crash); else writes and leaves the marker, all at once. Returns 1 written, 0 skipped.
 */
const SHARD_WRITE = `
local fence = tonumber(redis.call('GET', KEYS[1]) or '0')
local epoch = tonumber(ARGV[1])
if fence > epoch then return redis.error_reply('CDP_FENCED') end
if fence < epoch then redis.call('SET', KEYS[1], ARGV[1]) end
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
for _, op in ipairs(cjson.decode(ARGV[3])) do
  if op[1] == 'h' then redis.call('HSET', op[2], op[3], op[4])
  elseif op[1] == 's' then redis.call('SET', op[2], op[3])
  elseif op[1] == 'e' then redis.call('SET', op[2], op[3], 'EX', ARGV[2])
  else redis.call('DEL', op[2]) end
end
if KEYS[2] then redis.call('SET', KEYS[2], '1', 'EX', ARGV[2]) end
return 1`;

export type ShardOp =
  ['h', string, string, string] | ['s', string, string] | ['e', string, string] | ['x', string];

/**
 * How long a step's done marker outlives it (a redelivery comes long before); also the life of an intent
 * and of a message's resolutions, so that one a crash left unlisted or unsettled does not stay for ever.
 */
const DONE_TTL_S = 7 * 86_400;

export async function writeShard(
  redis: RedisCommands,
  fenceKey: string,
  doneKey: string,
  epoch: number,
  ops: ShardOp[],
): Promise<boolean> {
  try {
    const out = await redis.eval(SHARD_WRITE, {
      keys: doneKey ? [fenceKey, doneKey] : [fenceKey],
      arguments: [String(epoch), String(DONE_TTL_S), JSON.stringify(ops)],
    });
    return Number(out) === 1;
  } catch (err) {
    if (/CDP_FENCED/.test(String(err))) throw new FencedError(`shard write fenced: ${fenceKey}`);
    throw err;
  }
}

/**
 * `SHARD_WRITE` for several shards in one call, where one server holds every shard (no cluster): KEYS
 * per shard its fence then its done marker; ARGV: epoch, marker TTL in s, JSON [ops of shard 1, ...].
 * Every fence is checked before anything is written, so a refusal writes nothing.
 */
const SHARDS_WRITE = `
local epoch = tonumber(ARGV[1])
for s = 1, #KEYS, 2 do
  if tonumber(redis.call('GET', KEYS[s]) or '0') > epoch then return redis.error_reply('CDP_FENCED') end
end
local parts = cjson.decode(ARGV[3])
local written = 0
for s = 1, #KEYS, 2 do
  redis.call('SET', KEYS[s], ARGV[1])
  if redis.call('EXISTS', KEYS[s + 1]) == 0 then
    for _, op in ipairs(parts[(s + 1) / 2]) do
      if op[1] == 'h' then redis.call('HSET', op[2], op[3], op[4])
      elseif op[1] == 's' then redis.call('SET', op[2], op[3])
      elseif op[1] == 'e' then redis.call('SET', op[2], op[3], 'EX', ARGV[2])
      else redis.call('DEL', op[2]) end
    end
    redis.call('SET', KEYS[s + 1], '1', 'EX', ARGV[2])
    written = written + 1
  end
end
return written`;

/** One shard's part of a step: its fence, its done marker and its writes. */
export interface ShardPart {
  fenceKey: string;
  doneKey: string;
  ops: ShardOp[];
}

/**
 * A step's parts on several shards: on a cluster one fenced write per shard (its slot), all at once; on
 * a single server one call for them all (the same checks, atomically).
 */
export async function writeShards(
  redis: RedisCommands,
  cluster: boolean,
  epoch: number,
  parts: ShardPart[],
): Promise<void> {
  if (parts.length === 0) return;
  if (cluster) {
    await Promise.all(parts.map((p) => writeShard(redis, p.fenceKey, p.doneKey, epoch, p.ops)));
    return;
  }
  try {
    await redis.eval(SHARDS_WRITE, {
      keys: parts.flatMap((p) => [p.fenceKey, p.doneKey]),
      arguments: [String(epoch), String(DONE_TTL_S), JSON.stringify(parts.map((p) => p.ops))],
    });
  } catch (err) {
    if (/CDP_FENCED/.test(String(err))) throw new FencedError(`shard write fenced: ${parts[0]!.fenceKey}`);
    throw err;
  }
}

/**
 * The account's own step, checked against the lease: adds or removes a pending intent (and stores the
 * merge counter with an added one). KEYS: lease, pending set, merge counter; ARGV: lease value, 'add' |
 * 'rem', intent key, merge counter.
 */
const ACCOUNT_STEP = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('CDP_FENCED') end
if ARGV[2] == 'add' then
  redis.call('SADD', KEYS[2], ARGV[3])
  redis.call('SET', KEYS[3], ARGV[4])
else
  redis.call('SREM', KEYS[2], ARGV[3])
end
return 1`;

export async function accountStep(
  redis: RedisCommands,
  lease: Lease,
  keys: { pending: string; mergeSeq: string },
  op: 'add' | 'rem',
  intent: string,
  mergeSeq = 0,
): Promise<void> {
  try {
    await redis.eval(ACCOUNT_STEP, {
      keys: [lease.key, keys.pending, keys.mergeSeq],
      arguments: [lease.value, op, intent, String(mergeSeq)],
    });
  } catch (err) {
    if (/CDP_FENCED/.test(String(err))) throw new FencedError(`lease lost: ${lease.key}`);
    throw err;
  }
}
