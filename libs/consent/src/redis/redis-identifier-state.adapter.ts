import type { DriverHealth } from '@cdp/contracts';
import { accountShard, accountShardPrefix, ShardedHashes, type RedisConnection } from '@cdp/redis';
import {
  IdentifierState,
  replayIdentifierChanges,
  type IdentifierChange,
  type IdentifierStatus,
  type MetadataValue,
  type StoredIdentifierChange,
} from '../identifier-state.port.js';

const VERSION = '__v';
const CONSENT = 'consent';
const REACHABILITY = 'reachability';
const METADATA_TS = 'metadata_ts';
/** Each metadata field is a hash field of its own, so a change sets or clears it without a read. */
const METADATA_PREFIX = 'm:';

/** `t:<part>`: when the part was last written, in acceptance order (IdentifierStatus.times). */
const TIME_PREFIX = 't:';

/**
 * Applies changes in one atomic call, in order. Two keys per change: its shard's index (KEYS[2i-1]) and
 * its identifier's hash (KEYS[2i]). ARGV[1] JSON [[index member, at or '', [[hash field, value or null,
 * part], ...]], ...]. Every change counts a version; each hash field is written (or deleted, for null)
 * only if its part's time (field t:<part>) is not later than the change's at, and then takes it.
 * Returns the version after each change.
 */
const APPLY = `
local out = {}
for i, c in ipairs(cjson.decode(ARGV[1])) do
  local key = KEYS[2 * i]
  out[i] = redis.call('HINCRBY', key, '${VERSION}', 1)
  redis.call('SADD', KEYS[2 * i - 1], c[1])
  local at = tonumber(c[2])
  for _, f in ipairs(c[3]) do
    local tf = '${TIME_PREFIX}' .. f[3]
    local last = nil
    if at then last = tonumber(redis.call('HGET', key, tf)) end
    if not (last and last > at) then
      if f[2] == cjson.null then redis.call('HDEL', key, f[1]) else redis.call('HSET', key, f[1], f[2]) end
      if at then redis.call('HSET', key, tf, c[2]) end
    end
  end
end
return out`;

/**
 * Key layout: an identifier's hash on its account shard (`{<account>#hh}`, hh the shard of
 * `<field>:<value>`), beside that shard's index, so a big account's identifiers use every primary of a
 * cluster (docs/architecture.md, "One account across the cluster"). The field name holds no `:`.
 */
export const identifierStateKeys = {
  identifier: (account: string, field: string, value: string) =>
    `${accountShardPrefix(account, accountShard(`${field}:${value}`))}idstate:${field}:${value}`,
  /** `<field>:<value>` of the shard's identifiers with a state hash: a rebuild finds the keys from it, never by SCAN. */
  index: (account: string, shard: number) => `${accountShardPrefix(account, shard)}idstates`,
  /** The layout before the sharding: the account's own hash tag, one index (read only to move it). */
  legacyIdentifier: (account: string, member: string) => `cdp:{${account}}:idstate:${member}`,
  legacyIndex: (account: string) => `cdp:{${account}}:idstates`,
};

/** How many identifiers a rebuild writes per round of pipelined commands. */
const LOAD_ROUND = 500;

/**
 * Identifier state in Redis: one hash per identifier value. Every part of a change replaces the one
 * before (the latest consent or reachability; a metadata field set or deleted) unless a change
 * accepted later wrote it already, so a batch is one script call (APPLY) on a single server, and on a
 * cluster one per shard the batch touches: each atomic, in order, each change answered with the
 * identifier's counter. An identifier's changes are all on its shard, so their order holds; a crash
 * between two shards' calls leaves the other shards' changes to the redelivery, which applies them as
 * any repeated batch is applied (the parts by their times; the counter counts again, as before). The
 * same call adds each identifier to its shard's index, so no hash exists unindexed.
 *
 * An account's state written before the sharding (one hash tag, one index) is moved to the shards the
 * first time a process touches the account; the sharded call, the move and the rebuild's clearing are
 * ShardedHashes' (@cdp/redis), as for the list memberships.
 */
export class RedisIdentifierState extends IdentifierState {
  private readonly hashes: ShardedHashes;
  constructor(connection: RedisConnection) {
    super();
    this.hashes = new ShardedHashes(connection, 'idstate', 'idstates');
  }

  async apply(account: string, changes: IdentifierChange[]): Promise<number[]> {
    const members = changes.map((c) => `${c.field}:${c.value}`);
    const versions = await this.hashes.applyByShard<number>(account, APPLY, members, (indices) => ({
      keys: indices.flatMap((i) => [
        identifierStateKeys.index(account, accountShard(members[i]!)),
        identifierStateKeys.identifier(account, changes[i]!.field, changes[i]!.value),
      ]),
      arguments: [
        JSON.stringify(
          indices.map((i) => {
            const c = changes[i]!;
            return [members[i]!, c.at === undefined ? '' : String(c.at), hashFields(c)];
          }),
        ),
      ],
    }));
    return versions.map(Number);
  }

  async get(account: string, field: string, value: string): Promise<IdentifierStatus | undefined> {
    await this.hashes.ready(account);
    const hash = await this.hashes.commands.hGetAll(identifierStateKeys.identifier(account, field, value));
    if (!hash[VERSION]) return undefined;
    const status: IdentifierStatus = { version: Number(hash[VERSION]) };
    if (hash[CONSENT]) status.consent = JSON.parse(hash[CONSENT]) as IdentifierStatus['consent'];
    if (hash[REACHABILITY])
      status.reachability = JSON.parse(hash[REACHABILITY]) as IdentifierStatus['reachability'];
    if (hash[METADATA_TS]) {
      const fields: Record<string, MetadataValue> = {};
      for (const [name, json] of Object.entries(hash))
        if (name.startsWith(METADATA_PREFIX))
          fields[name.slice(METADATA_PREFIX.length)] = JSON.parse(json) as MetadataValue;
      status.metadata = { fields, ts: Number(hash[METADATA_TS]) };
    }
    for (const [name, at] of Object.entries(hash))
      if (name.startsWith(TIME_PREFIX)) (status.times ??= {})[name.slice(TIME_PREFIX.length)] = Number(at);
    return status;
  }

  load(account: string, changes: AsyncIterable<StoredIdentifierChange>): Promise<number> {
    return this.hashes.rebuild(account, LOAD_ROUND, async (rounds) => {
      let count = 0;
      for await (const { field, value, status } of replayIdentifierChanges(changes)) {
        const member = `${field}:${value}`;
        rounds.add(
          this.hashes.commands.hSet(identifierStateKeys.identifier(account, field, value), {
            [VERSION]: String(status.version),
            ...statusFields(status),
          }),
          this.hashes.commands.sAdd(identifierStateKeys.index(account, accountShard(member)), member),
        );
        count++;
        await rounds.unitDone();
      }
      return count;
    });
  }

  health(): Promise<DriverHealth> {
    return this.hashes.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * The hash fields a change writes: [field, value (null: delete the field), the part whose time guards
 * it (IdentifierStatus.times)].
 */
function hashFields(c: IdentifierChange): [string, string | null, string][] {
  switch (c.type) {
    case 'consent':
      return [[CONSENT, JSON.stringify({ consent: c.consent, reason: c.reason, ts: c.ts }), 'consent']];
    case 'reachability':
      return [
        [
          REACHABILITY,
          JSON.stringify({ reachable: c.reachable, update_type: c.update_type, reason: c.reason, ts: c.ts }),
          'reachability',
        ],
      ];
    case 'metadata': {
      const out: [string, string | null, string][] = [[METADATA_TS, String(c.ts), 'metadata']];
      for (const [name, value] of Object.entries(c.metadata))
        out.push([METADATA_PREFIX + name, value === null ? null : JSON.stringify(value), `metadata.${name}`]);
      return out;
    }
  }
}

/** A whole state as hash fields (a rebuild writes it at once). */
function statusFields(s: IdentifierStatus): Record<string, string> {
  const out: Record<string, string> = {};
  if (s.consent) out[CONSENT] = JSON.stringify(s.consent);
  if (s.reachability) out[REACHABILITY] = JSON.stringify(s.reachability);
  if (s.metadata) {
    out[METADATA_TS] = String(s.metadata.ts);
    for (const [name, value] of Object.entries(s.metadata.fields))
      out[METADATA_PREFIX + name] = JSON.stringify(value);
  }
  for (const [part, at] of Object.entries(s.times ?? {})) out[TIME_PREFIX + part] = String(at);
  return out;
}
