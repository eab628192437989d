import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '../lib/free-port.js';

/**
 * A Redis Cluster of `size` primaries on loopback for the spread benchmarks: no replicas, no persistence,
 * each node a child process the caller stops with `stopNodes` (by PID, also on failure).
 */
export interface ClusterNode {
  port: number;
  proc: ChildProcess;
}

export const cli = (port: number, ...a: string[]): string =>
  execFileSync('redis-cli', ['-p', String(port), ...a], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'pipe'],
  });

/** Sends one command per line to a node in one redis-cli session; its replies, one per line. */
export const cliBatch = (port: number, commands: string[]): string[] =>
  execFileSync('redis-cli', ['-p', String(port)], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    input: commands.join('\n') + '\n',
    stdio: ['pipe', 'pipe', 'pipe'],
  })
    .split('\n')
    .filter(Boolean);

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (check()) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts `size` nodes (1, or at least 3) in `dir` and joins them; resolves once the cluster is ok. */
export async function startCluster(dir: string, size: number, extra: string[] = []): Promise<ClusterNode[]> {
  if (size !== 1 && size < 3) throw new Error('a cluster here has 1 or at least 3 primaries');
  const ports: number[] = [];
  while (ports.length < size) {
    const port = await freePort();
    if (!ports.includes(port) && port + 10000 < 65536) ports.push(port);
  }
  const nodes = ports.map((port) => ({
    port,
    proc: spawn(
      'redis-server',
      [
        '--bind',
        '127.0.0.1',
        '--port',
        String(port),
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        ...extra,
      ],
      { stdio: 'ignore' },
    ),
  }));
  for (const { port } of nodes) await until(() => cli(port, 'PING').includes('PONG'), 10_000, `port ${port}`);
  if (size >= 3) {
    execFileSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { stdio: 'ignore' },
    );
  } else {
    // `--cluster create` wants three primaries: one node (the 1-primary baseline) takes every slot itself.
    cli(ports[0]!, 'CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
  }
  await until(
    () => nodes.every((n) => cli(n.port, 'CLUSTER', 'INFO').includes('cluster_state:ok')),
    30_000,
    'cluster_state:ok',
  );
  return nodes;
}

export function stopNodes(nodes: ClusterNode[]): void {
  for (const n of nodes) if (n.proc.exitCode === null) n.proc.kill('SIGKILL');
}

/** A node's figures: used memory (bytes) and Redis CPU (user + sys, seconds). */
export function figures(port: number): { memory: number; cpu: number } {
  const mem = Number(/used_memory:(\d+)/.exec(cli(port, 'INFO', 'memory'))![1]);
  const cpu = cli(port, 'INFO', 'cpu');
  const user = Number(/used_cpu_user:([\d.]+)/.exec(cpu)![1]);
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(cpu)![1]);
  return { memory: mem, cpu: user + sys };
}

/** Keys of `pattern` on one node (SCAN, not KEYS: no long command on the server). */
export function scanKeys(port: number, pattern: string): string[] {
  return cli(port, '--scan', '--pattern', pattern).split('\n').filter(Boolean);
}

/** The share (%) of value i in the total. */
export const share = (values: number[], i: number): number =>
  (100 * values[i]!) / values.reduce((a, b) => a + b, 0);
