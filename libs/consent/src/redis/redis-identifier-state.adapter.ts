import type { DriverHealth } from '@cdp/contracts';
import type { RedisCommands, RedisConnection } from '@cdp/redis';
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
 * Applies a batch of changes in one atomic call, in order. KEYS[1] the account's index, then one
 * identifier hash per change. ARGV[1] JSON [[index member, at or '', [[hash field, value or null,
 * part], ...]], ...]. Every change counts a version; each hash field is written (or deleted, for null)
 * only if its part's time (field t:<part>) is not later than the change's at, and then takes it.
 * Returns the version after each change.
 */
const APPLY = `
local out = {}
for i, c in ipairs(cjson.decode(ARGV[1])) do
  local key = KEYS[i + 1]
  out[i] = redis.call('HINCRBY', key, '${VERSION}', 1)
  redis.call('SADD', KEYS[1], c[1])
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

/** Key layout: the account as hash tag (one cluster slot per account); the field name holds no `:`. */
export const identifierStateKeys = {
  identifier: (account: string, field: string, value: string) => `cdp:{${account}}:idstate:${field}:${value}`,
  /** `<field>:<value>` of every identifier with a state hash: a rebuild finds the keys from it, never by SCAN. */
  index: (account: string) => `cdp:{${account}}:idstates`,
};

/**
 * Identifier state in Redis: one hash per identifier value. Every part of a change replaces the one
 * before (the latest consent or reachability; a metadata field set or deleted) unless a change
 * accepted later wrote it already, so a batch is one script call (APPLY): atomic, in order, each
 * change answered with the identifier's counter. The same call adds the identifier to the account's
 * index, so no hash exists unindexed.
 */
export class RedisIdentifierState extends IdentifierState {
  private readonly redis: RedisCommands;
  constructor(private readonly connection: RedisConnection) {
    super();
    this.redis = connection.commands;
  }

  async apply(account: string, changes: IdentifierChange[]): Promise<number[]> {
    if (changes.length === 0) return [];
    const encoded = changes.map((c) => [
      `${c.field}:${c.value}`,
      c.at === undefined ? '' : String(c.at),
      hashFields(c),
    ]);
    // EVAL, as the consent state does: a short script, nothing to load again after a Redis restart.
    const versions = (await this.redis.eval(APPLY, {
      keys: [
        identifierStateKeys.index(account),
        ...changes.map((c) => identifierStateKeys.identifier(account, c.field, c.value)),
      ],
      arguments: [JSON.stringify(encoded)],
    })) as number[];
    return versions.map(Number);
  }

  async get(account: string, field: string, value: string): Promise<IdentifierStatus | undefined> {
    const hash = await this.redis.hGetAll(identifierStateKeys.identifier(account, field, value));
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

  async load(account: string, changes: AsyncIterable<StoredIdentifierChange>): Promise<number> {
    const index = identifierStateKeys.index(account);
    const prefix = identifierStateKeys.identifier(account, '', '').slice(0, -1);
    await this.connection.clearIndexed(index, (m) => prefix + m);
    return this.connection.writeInBatches(
      replayIdentifierChanges(changes),
      (batch, { field, value, status }) => {
        const key = identifierStateKeys.identifier(account, field, value);
        batch.hSet(key, { [VERSION]: String(status.version), ...statusFields(status) });
        batch.sAdd(index, `${field}:${value}`);
      },
    );
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
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
