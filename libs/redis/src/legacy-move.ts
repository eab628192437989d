import { ACCOUNT_SHARDS, accountShard, accountShardPrefix, shardPrefixOf } from './account-shards.js';
import type { RedisConnection } from './redis-connection.js';

/**
 * Writes a hash moved from the layout before the sharding (KEYS[1] its new hash, KEYS[2] its shard's
 * index; ARGV[1] the index member, then field, value pairs), unless the new hash exists: then a change
 * applied since (by a process that had moved it already) holds the state.
 */
const MOVE = `if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 2))
  redis.call('SADD', KEYS[2], ARGV[1])
end
return 1`;

/**
 * An account's indexed hashes (one per identifier, per customer…) before and after the sharding: a
 * member's hash and its entry in its shard's index live on the member's shard (`accountShard(member)`).
 */
export interface IndexedHashes {
  /** The account tag's one index of the layout before. */
  legacyIndex: string;
  legacyHash: (member: string) => string;
  shardedHash: (member: string) => string;
  shardIndex: (shard: number) => string;
}

/**
 * The layout of an account's indexed hashes named `<hash>:<member>` with the index `<index>`: before the
 * sharding on the account's tag, now on the member's shard beside that shard's index.
 */
export function accountIndexedHashes(account: string, hash: string, index: string): IndexedHashes {
  return {
    legacyIndex: `cdp:{${account}}:${index}`,
    legacyHash: (member) => `cdp:{${account}}:${hash}:${member}`,
    shardedHash: (member) => `${shardPrefixOf(account, member)}${hash}:${member}`,
    shardIndex: (shard) => `${accountShardPrefix(account, shard)}${index}`,
  };
}

/**
 * Moves an account's indexed hashes from the layout before the sharding to their shards: each hash
 * written to its shard (unless a change since wrote it there: MOVE), then removed, and a page's members
 * leave the old index last, so a process that crashes midway leaves the rest to the next one. Two
 * processes moving at once write the same thing once.
 */
export async function moveIndexedHashesToShards(
  connection: RedisConnection,
  at: IndexedHashes,
): Promise<void> {
  const redis = connection.commands;
  if (!(await redis.exists(at.legacyIndex))) return;
  for await (const members of connection.setMembers(at.legacyIndex)) {
    // A page's hashes at once (the client pipelines them), each read, moved, then removed.
    await Promise.all(
      members.map(async (member) => {
        const legacy = at.legacyHash(member);
        const fields = Object.entries(await redis.hGetAll(legacy)).flat();
        if (fields.length)
          await redis.eval(MOVE, {
            keys: [at.shardedHash(member), at.shardIndex(accountShard(member))],
            arguments: [member, ...fields],
          });
        await redis.unlink(legacy);
      }),
    );
    await redis.sRem(at.legacyIndex, members);
  }
}

/** Deletes an account's indexed hashes, those of the layout before the sharding and every shard's (a rebuild). */
export async function clearIndexedHashes(connection: RedisConnection, at: IndexedHashes): Promise<void> {
  await connection.clearIndexed(at.legacyIndex, at.legacyHash);
  for (let shard = 0; shard < ACCOUNT_SHARDS; shard++)
    await connection.clearIndexed(at.shardIndex(shard), at.shardedHash);
}
