import { createClient, createCluster, createSentinel } from 'redis';

const reconnectStrategy = (retries: number) => Math.min(retries * 100, 2000);

function makeClient(url: string, queueWhileOffline = true) {
  return createClient({ url, socket: { reconnectStrategy }, disableOfflineQueue: !queueWhileOffline });
}

function makeCluster(seeds: string[], queueWhileOffline: boolean) {
  return createCluster({
    rootNodes: seeds.map((url) => ({ url })),
    defaults: { socket: { reconnectStrategy }, disableOfflineQueue: !queueWhileOffline },
  });
}

/**
 * The first seed that accepts a connection, trying each once (no reconnects) round after round until
 * one does, as a single reconnecting client would wait for its one server.
 */
async function firstAnswering(seeds: string[]): Promise<string> {
  for (;;) {
    for (const seed of seeds) {
      const probe = createClient({ url: seed, socket: { reconnectStrategy: false, connectTimeout: 2000 } });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        await probe.close();
        return seed;
      } catch {
        probe.destroy();
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * A primary behind Sentinel: node-redis asks the sentinels for the primary named `name`, follows it
 * through failovers, and sends every command to it over one connection (the pool's one client), so a
 * WAIT counts the writes made before it.
 */
function makeSentinel(sentinels: string[], name: string, queueWhileOffline: boolean) {
  return createSentinel({
    name,
    sentinelRootNodes: sentinels.map((url) => {
      const { hostname, port } = new URL(url);
      return { host: hostname, port: Number(port || 26379) };
    }),
    nodeClientOptions: { socket: { reconnectStrategy }, disableOfflineQueue: !queueWhileOffline },
    sentinelClientOptions: { socket: { reconnectStrategy } },
  });
}

type SingleClient = ReturnType<typeof makeClient>;
type ClusterClient = ReturnType<typeof makeCluster>;
type SentinelClient = ReturnType<typeof makeSentinel>;

/** A primary as the node-level commands (FUNCTION, INFO, PING, WAIT) reach it. */
interface Primary {
  send(args: string[]): Promise<unknown>;
}

/**
 * The key-addressed commands the Redis drivers use, which a single-node client and a cluster client
 * both have with the same signatures (a cluster client routes each by its first key). Commands that
 * address a node rather than a key (FUNCTION LOAD, SCAN, PING, WAIT) go through RedisConnection.
 */
export type RedisCommands = Pick<
  SingleClient,
  | 'get'
  | 'set'
  | 'del'
  | 'unlink'
  | 'rename'
  | 'exists'
  | 'pTTL'
  | 'pExpire'
  | 'hGet'
  | 'hGetAll'
  | 'hSet'
  | 'hDel'
  | 'hIncrBy'
  | 'hScan'
  | 'sAdd'
  | 'sRem'
  | 'sMembers'
  | 'sUnion'
  | 'smIsMember'
  | 'sScan'
  | 'sCard'
  | 'zRange'
  | 'zRem'
  | 'eval'
  | 'fCall'
  | 'multi'
>;

/** A Redis functions library: its name (as `redis.register_function` files it) and its code. */
export interface RedisLibrary {
  name: string;
  code: string;
}

/** How long a primary's replica count is trusted before WAIT looks again. */
const REPLICA_CHECK_MS = 5000;
/** Items per SSCAN/HSCAN page: one round trip each, and each page a short command on the server. */
const PAGE = 1000;
/**
 * One Redis deployment as every Redis driver sees it: a single server, or a Redis Cluster found from
 * a seed list (`REDIS_URL=redis://a:7000,redis://b:7001`). Every key of an account carries the
 * account as hash tag, so all of an account's keys share one slot, and a batch, a MULTI or a function
 * call for one account runs on one node in either case.
 */
export class RedisConnection {
  /** Libraries this process calls, loaded on every primary at first use and after a "not found". */
  private readonly libraries = new Map<string, { library: RedisLibrary; loaded?: Promise<void> }>();
  /** Whether a primary had a connected replica when last looked at (WAIT only where there is one). */
  private readonly replicaSeen = new WeakMap<object, { has: boolean; at: number }>();
  /** The primary behind Sentinel, as node-level commands reach it (one object, so replicaSeen keys on it). */
  private readonly sentinelPrimary: Primary | undefined;
  /** The health check in flight: every driver reports the shared connection's health at once. */
  private checking: Promise<{ driver: string; ready: boolean; detail?: string }> | undefined;

  private constructor(
    readonly commands: RedisCommands,
    private readonly single: SingleClient | undefined,
    private readonly cluster: ClusterClient | undefined,
    private readonly sentinel?: SentinelClient,
  ) {
    if (sentinel) this.sentinelPrimary = { send: (args) => sentinel.sendCommand(false, args) };
  }

  get isCluster(): boolean {
    return this.cluster !== undefined;
  }

  /**
   * Connects to the first answering seed and asks it whether it is a cluster node (`INFO cluster`):
   * a cluster gets the cluster client, seeded with every URL given; a single server must be the only
   * URL (a list of standalone servers is a misconfiguration, refused at boot rather than half-used).
   *
   * While a node is unreachable, commands wait for it (up to the client's command timeout) with
   * `queueWhileOffline`, the processor's choice: its work waits in the bus anyway. A process answering
   * clients fails them at once instead, so a request is refused (503) without waiting on a Redis that is away.
   */
  static async connect(
    urls: string,
    queueWhileOffline = true,
    sentinelName?: string,
  ): Promise<RedisConnection> {
    const seeds = urls
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean);
    if (seeds.length === 0) throw new Error('REDIS_URL names no server');
    if (sentinelName) {
      const sentinel = makeSentinel(seeds, sentinelName, queueWhileOffline);
      sentinel.on('error', () => undefined); // it follows the primary on its own; commands fail meanwhile
      await sentinel.connect();
      return new RedisConnection(sentinel as unknown as RedisCommands, undefined, undefined, sentinel);
    }
    let lastError: unknown;
    // A seed list starts from one that answers: a client that reconnects on its own never gives up on a
    // dead node, so a process restarted while one cluster node is down would wait on it for ever.
    const first = seeds.length > 1 ? await firstAnswering(seeds) : seeds[0]!;
    for (const seed of [first, ...seeds.filter((s) => s !== first)]) {
      const probe = makeClient(seed, queueWhileOffline);
      probe.on('error', () => undefined); // reconnects on its own; commands fail meanwhile and are retried
      try {
        await probe.connect();
        const info = await probe.info('cluster');
        if (/cluster_enabled:1/.test(info)) {
          await probe.close();
          // The cluster client learns the slot map from its first root node: the one that answered.
          const cluster = makeCluster([seed, ...seeds.filter((s) => s !== seed)], queueWhileOffline);
          cluster.on('error', () => undefined);
          await cluster.connect();
          return new RedisConnection(cluster as unknown as RedisCommands, undefined, cluster);
        }
        if (seeds.length > 1) {
          await probe.close();
          throw new Error(`REDIS_URL lists ${seeds.length} servers but ${seed} is not a cluster node`);
        }
        return new RedisConnection(probe, probe, undefined);
      } catch (err) {
        probe.destroy();
        if (String(err).includes('is not a cluster node')) throw err;
        lastError = err;
      }
    }
    throw new Error(`no Redis seed answered: ${String(lastError)}`);
  }

  /** The primaries: the single server, the one behind Sentinel, or every primary of the cluster's slot map. */
  private async primaries(): Promise<Primary[]> {
    if (this.sentinelPrimary) return [this.sentinelPrimary];
    if (this.single) return [asPrimary(this.single)];
    const cluster = this.cluster!;
    const nodes = await Promise.all(
      cluster.masters.map((m) => cluster.nodeClient(m) as Promise<SingleClient>),
    );
    return nodes.map(asPrimary);
  }

  /** Runs a node-level command (FUNCTION, INFO, FLUSHALL...) on every primary; answers in the primaries' order. */
  async onEveryPrimary(command: string[]): Promise<unknown[]> {
    return Promise.all((await this.primaries()).map((node) => node.send(command)));
  }

  /**
   * Makes sure every primary has this code of the library (a replica has what its primary had, so a
   * promoted replica has it too; a primary restarted without persistence or added later gets it here).
   */
  private async loadEverywhere(library: RedisLibrary): Promise<void> {
    const wanted = JSON.stringify(library.code);
    await Promise.all(
      (await this.primaries()).map(async (node) => {
        const listed: unknown = await node.send([
          'FUNCTION',
          'LIST',
          'LIBRARYNAME',
          library.name,
          'WITHCODE',
        ]);
        if (JSON.stringify(listed).includes(wanted)) return;
        await node.send(['FUNCTION', 'LOAD', 'REPLACE', library.code]);
      }),
    );
  }

  /** Loads a library on every primary now (at boot, so the first call does not pay for it). */
  async loadLibrary(library: RedisLibrary): Promise<void> {
    const entry = this.libraries.get(library.name) ?? { library };
    this.libraries.set(library.name, entry);
    entry.loaded ??= this.loadEverywhere(library).catch((err: unknown) => {
      entry.loaded = undefined;
      throw err;
    });
    await entry.loaded;
  }

  /**
   * Calls a function of `library`, routed by its first key. A node without the library (restarted
   * empty, or new to the cluster) answers "Function not found": load it on every primary and call again.
   */
  async fcall(library: RedisLibrary, fn: string, keys: string[], args: string[]): Promise<string> {
    await this.loadLibrary(library);
    try {
      return (await this.commands.fCall(fn, { keys, arguments: args })) as string;
    } catch (err) {
      if (!/Function not found|no such function/i.test(String(err))) throw err;
      this.libraries.get(library.name)!.loaded = undefined;
      await this.loadLibrary(library);
      return (await this.commands.fCall(fn, { keys, arguments: args })) as string;
    }
  }

  /**
   * Waits until the writes made so far on the connection to the primary owning `key` reached a
   * replica, so an acknowledged write survives that primary failing over (Redis replicates
   * asynchronously). A primary without a connected replica (a single server; a replica promoted after
   * its primary died, until the old one comes back as its replica) has nothing to wait for. Throws when
   * no replica confirmed within `timeoutMs`: the caller leaves its work unacknowledged, to be redone.
   */
  async waitForReplica(key: string, timeoutMs: number): Promise<void> {
    const node =
      this.sentinelPrimary ??
      asPrimary(this.cluster ? await this.cluster.getNodeClientForKey(key) : this.single!);
    await this.waitOn(node, timeoutMs);
  }

  /**
   * waitForReplica on every primary at once: for writes spread over an account's shards (a batch's
   * profiles, memberships, orders). A primary this connection wrote nothing to answers at once.
   */
  async waitForReplicas(timeoutMs: number): Promise<void> {
    await Promise.all((await this.primaries()).map((node) => this.waitOn(node, timeoutMs)));
  }

  private async waitOn(node: Primary, timeoutMs: number): Promise<void> {
    if (!(await this.hasReplica(node))) return;
    // On the node's own connection, the one that carried the writes: WAIT counts that connection's writes.
    const acked = await node.send(['WAIT', '1', String(timeoutMs)]);
    if (Number(acked) < 1) {
      this.replicaSeen.delete((node as { client?: object }).client ?? node);
      throw new Error(`no Redis replica confirmed the writes within ${timeoutMs} ms`);
    }
  }

  /** Whether the primary has an online replica, looked up at most every REPLICA_CHECK_MS. */
  private async hasReplica(node: Primary): Promise<boolean> {
    const id = (node as { client?: object }).client ?? node;
    const seen = this.replicaSeen.get(id);
    if (seen && Date.now() - seen.at < REPLICA_CHECK_MS) return seen.has;
    // Online only: a replica still loading its first copy confirms nothing until it has caught up.
    const has = /^slave\d+:.*state=online/m.test(String(await node.send(['INFO', 'replication'])));
    this.replicaSeen.set(id, { has, at: Date.now() });
    return has;
  }

  /** Every member of a set, a page at a time (SSCAN: no keyspace walk, no long command on the server). */
  async *setMembers(key: string): AsyncIterable<string[]> {
    let cursor = '0';
    do {
      const page = await this.commands.sScan(key, cursor, { COUNT: PAGE });
      cursor = String(page.cursor);
      if (page.members.length) yield page.members;
    } while (cursor !== '0');
  }

  /**
   * Removes the keys a set indexes and the set's members with them, a page at a time (an account's state
   * cleared before a rebuild writes it again); `keyOf` names a member's key.
   */
  async clearIndexed(index: string, keyOf: (member: string) => string): Promise<void> {
    for await (const members of this.setMembers(index)) {
      await this.commands.multi().unlink(members.map(keyOf)).sRem(index, members).exec();
    }
  }

  /** Every field and value of a hash, a page at a time (HSCAN). */
  async *hashEntries(key: string): AsyncIterable<{ field: string; value: string }[]> {
    let cursor = '0';
    do {
      const page = await this.commands.hScan(key, cursor, { COUNT: PAGE });
      cursor = String(page.cursor);
      if (page.entries.length)
        yield page.entries.map((e) => ({ field: String(e.field), value: String(e.value) }));
    } while (cursor !== '0');
  }

  /**
   * Ready when every primary answers and, on a cluster, every slot is served (`cluster_state:ok`): any
   * account may live in any slot, so one unreachable primary makes the role unable to serve some
   * accounts. A failed check asks the cluster for its slot map again, so a promoted replica is found.
   */
  health(): Promise<{ driver: string; ready: boolean; detail?: string }> {
    this.checking ??= this.check().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async check(): Promise<{ driver: string; ready: boolean; detail?: string }> {
    const driver = this.cluster ? 'redis-cluster' : this.sentinel ? 'redis-sentinel' : 'redis';
    try {
      const nodes = await this.primaries();
      await Promise.all(nodes.map((node) => withTimeout(node.send(['PING']), 1000)));
      if (this.sentinel) {
        // A primary that answers but is a replica now (demoted, the client not yet moved on) takes no writes.
        const role = String(await withTimeout(nodes[0]!.send(['INFO', 'replication']), 1000));
        if (!/^role:master/m.test(role)) throw new Error('the primary Sentinel named is a replica now');
      }
      if (this.cluster) {
        const info = await withTimeout(nodes[0]!.send(['CLUSTER', 'INFO']), 1000);
        const state = /cluster_state:(\w+)/.exec(String(info))?.[1];
        if (state !== 'ok') throw new Error(`cluster_state:${state}`);
      }
      return { driver, ready: true };
    } catch (err) {
      if (this.cluster) void this.cluster._slots.rediscover(undefined as never).catch(() => undefined);
      return { driver, ready: false, detail: String(err) };
    }
  }

  async close(): Promise<void> {
    await (this.cluster ?? this.sentinel ?? this.single)!.close().catch(() => undefined);
  }
}

/** A node's own client as a Primary; `client` keeps it recognisable (replicaSeen is keyed by it). */
function asPrimary(client: SingleClient): Primary & { client: SingleClient } {
  return { client, send: (args) => client.sendCommand(args) };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Connects to the Redis every Redis driver shares; see RedisConnection.connect. */
export async function connectRedis(
  url: string,
  queueWhileOffline = true,
  sentinelName?: string,
): Promise<RedisConnection> {
  return RedisConnection.connect(url, queueWhileOffline, sentinelName);
}

/** The health of the shared connection, as every Redis driver reports it. */
export function redisHealth(
  connection: RedisConnection,
): Promise<{ driver: string; ready: boolean; detail?: string }> {
  return connection.health();
}
