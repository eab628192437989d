import { crc32 } from 'node:zlib';

/**
 * An account's virtual shards (docs/architecture.md, "One account across the cluster"). The count and
 * the shard function are part of every sharded key's name: changing either moves the data, so both are
 * fixed. 256 tags spread an account over a cluster's primaries with a share deviation of ~3 % on three.
 */
export const ACCOUNT_SHARDS = 256;

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
