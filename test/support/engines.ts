import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './child-process.js';

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
        : [
            'redis-server',
            [
              '--bind',
              '127.0.0.1',
              '--port',
              String(this.port),
              '--save',
              '',
              '--appendonly',
              'no',
              '--dir',
              this.dir,
            ],
          ];
    this.proc = spawn(cmd, args, { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (!(await reachable(this.port))) {
      if (Date.now() > deadline) throw new Error(`${this.kind} did not start on port ${this.port}`);
      await new Promise((r) => setTimeout(r, 50));
    }
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
    if (!proc || proc.exitCode !== null) return;
    await new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill('SIGTERM');
    });
    this.proc = undefined;
  }
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
