import { accountShard, groupBy, OncePerAccount } from './account-shards.js';
import {
  accountIndexedHashes,
  clearIndexedHashes,
  moveIndexedHashesToShards,
  type IndexedHashes,
} from './legacy-move.js';
import type { RedisCommands, RedisConnection } from './redis-connection.js';

/** One script call's keys and arguments, for the items of one shard (or of all, on a single server). */
export interface ShardCall {
  keys: string[];
  arguments: string[];
}

/**
 * A rebuild's writes, sent as they are added (the client pipelines them) and awaited a round at a time,
 * so that a large account holds one round in memory. Single commands, not MULTI: a round spans shards,
 * which a cluster cannot take in one transaction.
 */
export class WriteRounds {
  private round: Promise<unknown>[] = [];
  private units = 0;
  /** `perRound`: how many units (customers, identifiers) a round writes. */
  constructor(private readonly perRound: number) {}

  add(...commands: Promise<unknown>[]): void {
    // Marked handled now: a command failing before its round is awaited must not be an unhandled
    // rejection (which ends the process); the round's Promise.all still rejects with it.
    for (const command of commands) command.catch(() => undefined);
    this.round.push(...commands);
  }

  /** One unit added whole: a full round is awaited before the next is started. */
  async unitDone(): Promise<void> {
    if (++this.units % this.perRound === 0) await this.flush();
  }

  async flush(): Promise<void> {
    const round = this.round;
    this.round = [];
    await Promise.all(round);
  }
}

/**
 * An adapter's indexed hashes on the account shards (one hash per customer, per identifier…, each beside
 * its shard's index; `accountIndexedHashes`): what every such adapter does alike, so that each says only
 * its own script, encoding and reads.
 *
 * - Before an account's first read or write in this process, what the layout before the sharding holds
 *   is moved to the shards (`ready`, once per account: moveIndexedHashesToShards).
 * - A batch is one script call on a single server and one per shard on a cluster (`applyByShard`).
 * - A rebuild starts from nothing and writes in rounds (`rebuild`).
 */
export class ShardedHashes {
  readonly commands: RedisCommands;
  /** Accounts this process has checked for (and moved) hashes in the layout before the sharding. */
  private readonly moved = new OncePerAccount((account) =>
    moveIndexedHashesToShards(this.connection, this.of(account)),
  );

  /** `hash`, `index`: the names of `accountIndexedHashes` (`<hash>:<member>` beside `<index>`). */
  constructor(
    readonly connection: RedisConnection,
    private readonly hash: string,
    private readonly index: string,
  ) {
    this.commands = connection.commands;
  }

  /** Where the account's hashes live, before the sharding and on its shards. */
  of(account: string): IndexedHashes {
    return accountIndexedHashes(account, this.hash, this.index);
  }

  /** Call before reading or writing an account's hashes: moves those of the layout before the sharding, once. */
  ready(account: string): Promise<void> {
    return this.moved.run(account);
  }

  /**
   * Writes an account afresh: every hash of it deleted first (both layouts, so nothing is left to move),
   * then `write`'s commands sent in rounds of `perRound` units; answers what `write` counted. A rebuild
   * runs before the account is ready: a crash midway leaves it not ready, and the next rebuild clears
   * and writes it again.
   */
  async rebuild(
    account: string,
    perRound: number,
    write: (rounds: WriteRounds) => Promise<number>,
  ): Promise<number> {
    await clearIndexedHashes(this.connection, this.of(account));
    this.moved.markDone(account);
    const rounds = new WriteRounds(perRound);
    const count = await write(rounds);
    await rounds.flush();
    return count;
  }

  /**
   * Applies items of an account (the hashes of `members[i]`, item i's member) with `script`, once the
   * account is `ready`. A single server takes every shard's keys in one call; a cluster, one call per
   * shard (its slot), all at once. `call` gives the keys and arguments of one call's items (their
   * indices, in order); the script answers one reply per item, in that order. Replies come back in the
   * items' order. A member's items all go to its shard's call, so their order holds; a crash between two
   * shards' calls leaves the rest to the redelivery, which the script must take as a repeat.
   */
  async applyByShard<R>(
    account: string,
    script: string,
    members: readonly string[],
    call: (indices: number[]) => ShardCall,
  ): Promise<R[]> {
    if (members.length === 0) return [];
    await this.ready(account);
    const cluster = this.connection.isCluster;
    const groups = groupBy(members.keys(), (i) => (cluster ? accountShard(members[i]!) : 0));
    const replies = new Array<R>(members.length);
    await Promise.all(
      [...groups.values()].map(async (indices) => {
        // EVAL, not a Functions library: the scripts are short, and a Redis restarted without
        // persistence needs nothing loaded again.
        const out = (await this.commands.eval(script, call(indices))) as R[];
        indices.forEach((i, k) => (replies[i] = out[k]!));
      }),
    );
    return replies;
  }
}
