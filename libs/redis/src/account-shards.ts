import { crc32 } from 'node:zlib';

/**
 * An account's virtual shards (docs/architecture.md, "One account across the cluster"). The count and
 * the shard function are part of every sharded key's name: changing either moves the data, so both are
 * fixed. 256 tags spread an account over a cluster's primaries with a share deviation of ~3 % on three.
 */
export const ACCOUNT_SHARDS = 256;

/** Every shard number, 0 to ACCOUNT_SHARDS - 1: what a rebuild or a read of all shards walks. */
export const EVERY_SHARD: readonly number[] = Array.from({ length: ACCOUNT_SHARDS }, (_, shard) => shard);

/**
 * The shard of a thing of an account (an idempotency key, an identifier, a customer id): CRC32 of its
 * UTF-8 text, which Node, ClickHouse (`CRC32`) and a Lua table compute alike, modulo ACCOUNT_SHARDS.
 */
export function accountShard(text: string): number {
  return crc32(text) % ACCOUNT_SHARDS;
}

/**
 * The key prefix of one shard of an account: `cdp:{<account>#<hh>}:`. The braces make the shard its own
 * hash tag, so its keys share a slot and the 256 shards land on slots all over the cluster; `#` never
 * occurs in an account id, so a shard's tag never equals an account's own `{<account>}`.
 */
export function accountShardPrefix(account: string, shard: number): string {
  return `cdp:{${account}#${shard.toString(16).padStart(2, '0')}}:`;
}

/** The prefix of the shard that `text` belongs to. */
export function shardPrefixOf(account: string, text: string): string {
  return accountShardPrefix(account, accountShard(text));
}

/**
 * Runs a per-account step once per process (the move of an account's state from the layout before the
 * sharding onto its shards): later callers share the first run's promise; a failed run is forgotten, so
 * the next caller tries again.
 */
export class OncePerAccount {
  private readonly runs = new Map<string, Promise<void>>();
  constructor(private readonly step: (account: string) => Promise<void>) {}

  run(account: string): Promise<void> {
    let running = this.runs.get(account);
    if (!running) {
      running = this.step(account);
      this.runs.set(account, running);
      running.catch(() => this.runs.delete(account));
    }
    return running;
  }

  /** Records the step as done (a rebuild wrote the account's state afresh). */
  markDone(account: string): void {
    this.runs.set(account, Promise.resolve());
  }
}

/**
 * Items grouped by a key (a shard, a hash's name), in the order met: what is sent as one call per shard
 * or per hash. Within a group the items keep their order.
 */
export function groupBy<T, K>(items: Iterable<T>, keyOf: (item: T) => K): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = out.get(key);
    if (group) group.push(item);
    else out.set(key, [item]);
  }
  return out;
}
