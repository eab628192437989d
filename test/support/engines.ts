import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './child-process.js';
import { eventually, hasExited } from './eventually.js';

/**
 * A nats-server or redis-server of the test's own, on a free port with its own data directory, so a
 * fault test can restart or flush it without touching the machine's shared services.
 */
export class EngineProcess {
  private proc: ChildProcess | undefined;

  private constructor(
    readonly kind: 'nats' | 'redis',
    readonly port: number,
    private readonly dir: string,
  ) {}

  static async start(kind: 'nats' | 'redis'): Promise<EngineProcess> {
    const engine = new EngineProcess(kind, await freePort(), mkdtempSync(join(tmpdir(), `cdp-${kind}-`)));
    await engine.up();
    return engine;
  }

  get url(): string {
    return `${this.kind}://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    const [cmd, args] =
      this.kind === 'nats'
        ? ['/usr/sbin/nats-server', ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.dir]]
        : ['redis-server', redisServerArgs(this.port, this.dir)];
    const proc = spawn(cmd, args, { stdio: 'ignore' });
    this.proc = proc;
    await eventually(() => reachable(this.port), 10_000, 50, {
      timeoutMessage: () => `${this.kind} did not start on port ${this.port}`,
      whileRunning: { proc, message: () => `${this.kind} exited at start on port ${this.port}` },
    });
  }

  /** FLUSHALL on this redis-server, over a raw socket: a test needs no Redis client of its own for one command. */
  flush(): Promise<void> {
    if (this.kind !== 'redis') throw new Error('only a redis-server can be flushed');
    return new Promise((resolve, reject) => {
      const socket = connect(this.port, '127.0.0.1', () => socket.write('*1\r\n$8\r\nFLUSHALL\r\n'));
      socket.once('data', (d) => {
        socket.destroy();
        if (d.toString().startsWith('+OK')) resolve();
        else reject(new Error(d.toString()));
      });
      socket.once('error', reject);
    });
  }

  /** Stops the server for good and removes its files (a test run must not fill /tmp). */
  async remove(): Promise<void> {
    await this.down();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Stops the server (SIGTERM: NATS flushes its stream files) and waits for it to be gone. */
  async down(): Promise<void> {
    const proc = this.proc;
    // Gone already (exited, or killed by a signal): no 'exit' would come to wait for.
    if (!proc || hasExited(proc)) {
      this.proc = undefined;
      return;
    }
    await new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill('SIGTERM');
    });
    this.proc = undefined;
  }
}

/**
 * redis-server's arguments for a server of a test's own: on loopback, `more` (cluster or replica
 * settings), nothing persisted, its files in `dir`.
 */
export function redisServerArgs(port: number, dir: string, ...more: string[]): string[] {
  const persistNothing = ['--save', '', '--appendonly', 'no'];
  return ['--bind', '127.0.0.1', '--port', String(port), ...more, ...persistNothing, '--dir', dir];
}

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** nats-server processes a test started and has not stopped yet: killed when the test process exits. */
const liveNatsNodes = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of liveNatsNodes) proc.kill('SIGKILL');
});

/** One server of a NatsCluster: its client port, its route port, its JetStream store directory. */
export class NatsClusterNode {
  private proc: ChildProcess | undefined;

  constructor(
    readonly name: string,
    readonly port: number,
    readonly routePort: number,
    private readonly configFile: string,
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.proc !== undefined;
  }

  async up(): Promise<void> {
    const proc = spawn('/usr/sbin/nats-server', ['-c', this.configFile], { stdio: 'ignore' });
    this.proc = proc;
    liveNatsNodes.add(proc);
    proc.once('exit', () => liveNatsNodes.delete(proc));
    await eventually(() => reachable(this.port), 10_000, 50, {
      timeoutMessage: () => `nats-server ${this.name} did not start on ${this.port}`,
      whileRunning: { proc, message: () => `nats-server ${this.name} exited at start` },
    });
  }

  /** Stops this server (SIGKILL: as a lost machine goes) and waits until it is gone. */
  async down(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill(signal);
    });
  }
}

/**
 * A JetStream cluster of the test's own: `size` nats-servers on free loopback ports (client and route),
 * their stores in one temporary directory. Written for Debian's nats-server 2.9.
 */
export class NatsCluster {
  private constructor(
    readonly nodes: NatsClusterNode[],
    private readonly dir: string,
  ) {}

  /** `maxFileStore`: each server's jetstream max_file_store (what stream reservations come out of). */
  static async start(size = 3, maxFileStore = '8GB'): Promise<NatsCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-nats-cluster-'));
    const ports = [];
    for (let i = 0; i < size; i++) ports.push({ client: await freePort(), route: await freePort() });
    const routes = ports.map((p) => `nats-route://127.0.0.1:${p.route}`).join(', ');
    const nodes = ports.map((p, i) => {
      const name = `n${i + 1}`;
      const configFile = join(dir, `${name}.conf`);
      writeFileSync(
        configFile,
        [
          `server_name: ${name}`,
          `listen: 127.0.0.1:${p.client}`,
          `jetstream { store_dir: "${join(dir, name)}", max_file_store: ${maxFileStore} }`,
          `cluster { name: cdp-test, listen: 127.0.0.1:${p.route}, routes: [${routes}] }`,
        ].join('\n'),
      );
      return new NatsClusterNode(name, p.client, p.route, configFile);
    });
    const cluster = new NatsCluster(nodes, dir);
    try {
      await Promise.all(nodes.map((n) => n.up()));
      await cluster.waitForJetStream();
    } catch (err) {
      await cluster.remove();
      throw err;
    }
    return cluster;
  }

  /** The seed list of every server, as NATS_URL takes it. */
  get url(): string {
    return this.nodes.map((n) => n.url).join(',');
  }

  node(name: string): NatsClusterNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no server ${name} in this cluster`);
    return node;
  }

  /** Until every running server answers JetStream API requests (the meta group has a leader). */
  async waitForJetStream(timeoutMs = 30_000): Promise<void> {
    const { connect: natsConnect } = await import('@nats-io/transport-node');
    // One deadline for all the servers, as they come up together.
    const deadline = Date.now() + timeoutMs;
    for (const node of this.nodes.filter((n) => n.running)) {
      await eventually(
        async () => {
          const nc = await natsConnect({ servers: node.url, reconnect: false }).catch(() => undefined);
          const answer = await nc
            ?.request('$JS.API.INFO', undefined, { timeout: 1000 })
            .catch(() => undefined);
          await nc?.close();
          const body = answer ? (answer.json<{ error?: unknown; type?: string }>() ?? {}) : undefined;
          return body !== undefined && !body.error;
        },
        Math.max(0, deadline - Date.now()),
        200,
        { timeoutMessage: () => `JetStream did not come up on ${node.name}` },
      );
    }
  }

  /** Stops every server and removes their stores. */
  async remove(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.down('SIGTERM')));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
