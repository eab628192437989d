import type { RedisConnection } from './redis-connection.js';

/**
 * Runs one set command over several sets in one call: KEYS the sets; ARGV[1] the command (SMISMEMBER or
 * SADD), then per set its member count and its members. Members go to the command a thousand at a time,
 * so no set's share outgrows Lua's stack. Returns each command's reply in turn, as it came: copying
 * SMISMEMBER's answers into one flat list in Lua cost Redis a fifth more (0.95 against 0.80 µs a member).
 * One call halves the client's CPU against a command per set, but costs Redis more CPU a member (ARGV
 * copied into Lua and back): docs/benchmarks.md, "One call a batch on a single Redis".
 */
const ACROSS = `
local command = ARGV[1]
local out = {}
local at = 2
for k = 1, #KEYS do
  local last = at + tonumber(ARGV[at])
  local from = at + 1
  while from <= last do
    local to = math.min(from + 999, last)
    out[#out + 1] = redis.call(command, KEYS[k], unpack(ARGV, from, to))
    from = to + 1
  end
  at = last + 1
end
return out`;

/** Members per set key: what one batch asks or adds, grouped by the shard set each member is in. */
export type MembersBySet = Map<string, string[]>;

/**
 * Which members each set holds (SMISMEMBER), for sets on many account shards: one script call on a single
 * server, where any key may be touched (the sets a batch touches would otherwise cost a call each); on a
 * cluster one SMISMEMBER per set, all at once (each set is its shard's slot). Answers per set, in its
 * members' order.
 */
export async function setsHold(
  connection: RedisConnection,
  sets: MembersBySet,
): Promise<Map<string, boolean[]>> {
  const answers = new Map<string, boolean[]>();
  if (connection.isCluster) {
    await Promise.all(
      [...sets].map(async ([key, members]) =>
        answers.set(
          key,
          (await connection.commands.smIsMember(key, members)).map((a) => Number(a) === 1),
        ),
      ),
    );
    return answers;
  }
  const flat = ((await across(connection, 'SMISMEMBER', sets)) as number[][]).flat();
  let at = 0;
  for (const [key, members] of sets) {
    answers.set(
      key,
      flat.slice(at, at + members.length).map((a) => Number(a) === 1),
    );
    at += members.length;
  }
  return answers;
}

/** Adds members to sets on many account shards (SADD): one script call on a single server, on a cluster one SADD per set. */
export async function addToSets(connection: RedisConnection, sets: MembersBySet): Promise<void> {
  if (connection.isCluster) {
    await Promise.all([...sets].map(([key, members]) => connection.commands.sAdd(key, members)));
    return;
  }
  await across(connection, 'SADD', sets);
}

async function across(connection: RedisConnection, command: 'SMISMEMBER' | 'SADD', sets: MembersBySet) {
  if (sets.size === 0) return [];
  const args: string[] = [command];
  for (const members of sets.values()) args.push(String(members.length), ...members);
  // EVAL, as ShardedHashes does: a short script, nothing to load again after a Redis restart.
  return connection.commands.eval(ACROSS, { keys: [...sets.keys()], arguments: args });
}

/**
 * The union of sets on many account shards: one SUNION on a single server, where any key may be read
 * together; on a cluster one SMEMBERS per set, all at once (each set is its shard's slot).
 */
export async function membersOfSets(connection: RedisConnection, keys: readonly string[]): Promise<string[]> {
  if (!connection.isCluster) return connection.commands.sUnion([...keys]);
  const all = await Promise.all(keys.map((key) => connection.commands.sMembers(key)));
  return [...new Set(all.flat())];
}
