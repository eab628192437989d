import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connectRedis, type RedisConnection } from '@cdp/redis';
import { freePort } from './child-process.js';
import { eventually } from './eventually.js';
import { redisServerArgs } from './engines.js';

const run = promisify(execFile);

interface ClusterNode {
  port: number;
  proc: ChildProcess | undefined;
}

/**
 * A Redis Cluster of the test's own on loopback: `size` redis-servers (half primaries, half their
 * replicas) joined by `redis-cli --cluster create`, without persistence, each stopped by its own process
 * on `stop` (call it in afterAll: it runs when tests fail too).
 */
export class RedisClusterRig {
  private constructor(
    private readonly nodes: ClusterNode[],
    private readonly dir: string,
  ) {}

  /** A cluster with `size / 2` primaries, each with one replica; `nodeTimeoutMs` is how soon a dead primary fails over. */
  static async start(size = 6, nodeTimeoutMs = 1500): Promise<RedisClusterRig> {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-redis-cluster-'));
    const ports: number[] = [];
    // freePort returns a port free now; a second call may return the same one until it is taken.
    while (ports.length < size) {
      const port = await freePort();
      // The cluster bus listens on port + 10000: both must be usable.
      if (!ports.includes(port) && port + 10000 < 65536) ports.push(port);
    }
    const rig = new RedisClusterRig(
      ports.map((port) => ({ port, proc: undefined })),
      dir,
    );
    try {
      for (const node of rig.nodes) rig.spawnNode(node, nodeTimeoutMs);
      await Promise.all(rig.nodes.map((n) => eventually(() => rig.cli(n.port, 'PING'), 10_000)));
      await run('redis-cli', [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ]);
      await rig.waitUntilOk();
      // Every primary's replica has its first copy: from now on WAIT 1 is answered.
      await eventually(async () => {
        for (const { port } of await rig.primaries())
          if (!/state=online/.test(await rig.cli(port, 'INFO', 'replication'))) return false;
        return true;
      }, 30_000);
      return rig;
    } catch (err) {
      await rig.stop();
      throw err;
    }
  }

  private spawnNode(node: ClusterNode, nodeTimeoutMs: number): void {
    node.proc = spawn(
      'redis-server',
      redisServerArgs(
        node.port,
        this.dir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(this.dir, `nodes-${node.port}.conf`),
        '--cluster-node-timeout',
        String(nodeTimeoutMs),
      ),
      { stdio: 'ignore' },
    );
  }

  /** The seed list a driver is given (`REDIS_URL`). */
  get seeds(): string {
    return this.nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(',');
  }

  /** Runs one redis-cli command on a node; its text output. */
  async cli(port: number, ...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 5000 });
    return stdout;
  }

  /** Live nodes' ports. */
  private get live(): ClusterNode[] {
    return this.nodes.filter((n) => n.proc && n.proc.exitCode === null && n.proc.signalCode === null);
  }

  /** Waits until every live node says `cluster_state:ok` and sees every slot served by a live primary. */
  async waitUntilOk(timeoutMs = 30_000): Promise<void> {
    await eventually(async () => {
      for (const node of this.live) {
        if (!(await this.cli(node.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
      }
      const primaries = await this.primaries();
      const livePorts = new Set(this.live.map((n) => n.port));
      return primaries.every((p) => livePorts.has(p.port)) && primaries.length === this.nodes.length / 2;
    }, timeoutMs);
  }

  /** The primaries serving slots, as a live node sees them: port and slot ranges. */
  async primaries(): Promise<{ port: number; ranges: [number, number][] }[]> {
    const text = await this.cli(this.live[0]!.port, 'CLUSTER', 'NODES');
    const out: { port: number; ranges: [number, number][] }[] = [];
    for (const line of text.trim().split('\n')) {
      const parts = line.split(' ');
      if (!parts[2]!.includes('master') || parts[2]!.includes('fail') || parts.length < 9) continue;
      const port = Number(/:(\d+)@/.exec(parts[1]!)![1]);
      const ranges = parts.slice(8).map((r) => {
        const [a, b] = r.split('-').map(Number);
        return [a!, b ?? a!] as [number, number];
      });
      out.push({ port, ranges });
    }
    return out;
  }

  /** The keys matching `pattern` on each primary (SCAN on each), in the order of `primaries()`. */
  async keysByPrimary(pattern: string): Promise<string[][]> {
    return Promise.all(
      (await this.primaries()).map(async ({ port }) => {
        const found = new Set<string>();
        let cursor = '0';
        do {
          const out = await this.cli(port, 'SCAN', cursor, 'MATCH', pattern, 'COUNT', '10000');
          const [next, ...keys] = out.trim().split('\n');
          cursor = next!;
          for (const key of keys) if (key) found.add(key);
        } while (cursor !== '0');
        return [...found];
      }),
    );
  }

  /** The port of the primary serving `key`'s slot. */
  async primaryOf(key: string): Promise<number> {
    const slot = Number((await this.cli(this.live[0]!.port, 'CLUSTER', 'KEYSLOT', key)).trim());
    const owner = (await this.primaries()).find((p) => p.ranges.some(([a, b]) => slot >= a && slot <= b));
    if (!owner) throw new Error(`no primary serves slot ${slot}`);
    return owner.port;
  }

  /** Kills one node by its process (SIGKILL: no goodbye to the cluster) and waits for it to be gone. */
  async kill(port: number): Promise<void> {
    const node = this.nodes.find((n) => n.port === port)!;
    const proc = node.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill('SIGKILL');
    });
  }

  /** Stops every node this rig started, by its process, and removes their files. */
  async stop(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (node) => {
        const proc = node.proc;
        if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
        await new Promise((resolve) => {
          proc.once('exit', resolve);
          proc.kill('SIGKILL');
        });
      }),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A test file's cluster and its connection (through the roles' connection factory, given the seed list). */
export interface FileCluster {
  cluster: RedisClusterRig;
  redis: RedisConnection;
}

/**
 * One 6-node cluster for the whole test file: started in its beforeAll, connection closed and nodes
 * stopped in its afterAll (which runs when tests fail too). Read the fields inside tests and hooks.
 */
export function clusterForFile(): FileCluster {
  const file = {} as FileCluster;
  beforeAll(async () => {
    file.cluster = await RedisClusterRig.start();
    file.redis = await connectRedis(file.cluster.seeds);
  }, 60_000);
  afterAll(async () => {
    await file.redis?.close();
    await file.cluster?.stop();
  });
  return file;
}
