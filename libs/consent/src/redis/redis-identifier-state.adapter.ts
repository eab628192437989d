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

/** Key layout: the account as hash tag (one cluster slot per account); the field name holds no `:`. */
export const identifierStateKeys = {
  identifier: (account: string, field: string, value: string) => `cdp:{${account}}:idstate:${field}:${value}`,
  /** `<field>:<value>` of every identifier with a state hash: a rebuild finds the keys from it, never by SCAN. */
  index: (account: string) => `cdp:{${account}}:idstates`,
};

/**
 * Identifier state in Redis: one hash per identifier value. Every part of a change is a blind write
 * (the latest consent or reachability replaces the one before; a metadata field is set or deleted),
 * so a batch is one MULTI: atomic, in order, each change answered with the identifier's counter. The
 * same MULTI adds the identifier to the account's index, so no hash exists unindexed.
 */
export class RedisIdentifierState extends IdentifierState {
  private readonly redis: RedisCommands;
  constructor(private readonly connection: RedisConnection) {
    super();
    this.redis = connection.commands;
  }

  async apply(account: string, changes: IdentifierChange[]): Promise<number[]> {
    if (changes.length === 0) return [];
    const multi = this.redis.multi();
    const versionAt: number[] = [];
    let replies = 0;
    for (const c of changes) {
      const key = identifierStateKeys.identifier(account, c.field, c.value);
      versionAt.push(replies);
      multi.hIncrBy(key, VERSION, 1);
      multi.sAdd(identifierStateKeys.index(account), `${c.field}:${c.value}`);
      replies += 2;
      for (const [field, value] of Object.entries(hashFields(c))) {
        if (value === null) multi.hDel(key, field);
        else multi.hSet(key, field, value);
        replies++;
      }
    }
    const results = (await multi.exec()) as unknown[];
    return versionAt.map((at) => Number(results[at]));
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
    return status;
  }

  async load(account: string, changes: AsyncIterable<StoredIdentifierChange>): Promise<number> {
    const index = identifierStateKeys.index(account);
    const prefix = identifierStateKeys.identifier(account, '', '').slice(0, -1);
    for await (const members of this.connection.setMembers(index)) {
      await this.redis
        .multi()
        .unlink(members.map((m) => prefix + m))
        .sRem(index, members)
        .exec();
    }
    let count = 0;
    let pipeline = this.redis.multi();
    for await (const { field, value, status } of replayIdentifierChanges(changes)) {
      const key = identifierStateKeys.identifier(account, field, value);
      pipeline.hSet(key, { [VERSION]: String(status.version), ...statusFields(status) });
      pipeline.sAdd(index, `${field}:${value}`);
      if (++count % 1000 === 0) {
        await pipeline.exec();
        pipeline = this.redis.multi();
      }
    }
    await pipeline.exec();
    return count;
  }

  health(): Promise<DriverHealth> {
    return this.connection.health();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The hash fields a change writes (null: delete the field). */
function hashFields(c: IdentifierChange): Record<string, string | null> {
  switch (c.type) {
    case 'consent':
      return { [CONSENT]: JSON.stringify({ consent: c.consent, reason: c.reason, ts: c.ts }) };
    case 'reachability':
      return {
        [REACHABILITY]: JSON.stringify({
          reachable: c.reachable,
          update_type: c.update_type,
          reason: c.reason,
          ts: c.ts,
        }),
      };
    case 'metadata': {
      const out: Record<string, string | null> = { [METADATA_TS]: String(c.ts) };
      for (const [name, value] of Object.entries(c.metadata))
        out[METADATA_PREFIX + name] = value === null ? null : JSON.stringify(value);
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
  return out;
}
