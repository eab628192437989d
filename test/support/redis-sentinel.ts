import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './child-process.js';
import { eventually } from './eventually.js';
import { redisServerArgs } from './engines.js';

const run = promisify(execFile);

/** The primary's name in Sentinel (`REDIS_SENTINEL_NAME`). */
export const SENTINEL_NAME = 'cdp';

/**
 * A Redis primary, its replica and one sentinel of the test's own on loopback (Debian's redis-server,
 * no persistence). One sentinel with quorum 1 is enough to fail over; `downAfterMs` is how soon a
 * dead primary is given up. Every process is stopped by its own PID in `stop` (call it in afterAll).
 */
export class RedisSentinelRig {
  private readonly procs = new Map<number, ChildProcess>();

  private constructor(
    readonly primaryPort: number,
    readonly replicaPort: number,
    readonly sentinelPort: number,
    private readonly dir: string,
  ) {}

  static async start(downAfterMs = 1000): Promise<RedisSentinelRig> {
    const ports: number[] = [];
    while (ports.length < 3) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    const [primary, replica, sentinel] = ports as [number, number, number];
    const rig = new RedisSentinelRig(
      primary,
      replica,
      sentinel,
      mkdtempSync(join(tmpdir(), 'cdp-sentinel-')),
    );
    try {
      rig.spawn(primary, redisServerArgs(primary, rig.dir));
      rig.spawn(replica, redisServerArgs(replica, rig.dir, '--replicaof', '127.0.0.1', String(primary)));
      const conf = join(rig.dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${sentinel}`,
          'bind 127.0.0.1',
          `dir ${rig.dir}`,
          `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${primary} 1`,
          `sentinel down-after-milliseconds ${SENTINEL_NAME} ${downAfterMs}`,
          `sentinel failover-timeout ${SENTINEL_NAME} 10000`,
          '',
        ].join('\n'),
      );
      rig.spawn(sentinel, [conf, '--sentinel']);
      await eventually(
        async () => /state=online/.test(await rig.cli(primary, 'INFO', 'replication')),
        20_000,
      );
      // The sentinel found the replica (through the primary): it can promote it.
      await eventually(
        async () =>
          (await rig.cli(sentinel, 'SENTINEL', 'REPLICAS', SENTINEL_NAME)).includes(String(replica)),
        20_000,
      );
      return rig;
    } catch (err) {
      await rig.stop();
      throw err;
    }
  }

  private spawn(port: number, args: string[]): void {
    this.procs.set(port, spawn('redis-server', args, { stdio: 'ignore' }));
  }

  /** `REDIS_URL` of the driver: the sentinels. */
  get sentinels(): string {
    return `redis://127.0.0.1:${this.sentinelPort}`;
  }

  async cli(port: number, ...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 5000 });
    return stdout;
  }

  /** The primary's port as the sentinel names it now. */
  async primaryNow(): Promise<number> {
    const out = await this.cli(this.sentinelPort, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_NAME);
    return Number(out.trim().split('\n')[1]);
  }

  /** SIGKILLs one server by its process and waits until it is gone. */
  async kill(port: number): Promise<void> {
    const proc = this.procs.get(port);
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill('SIGKILL');
    });
  }

  async stop(): Promise<void> {
    await Promise.all([...this.procs.keys()].map((port) => this.kill(port)));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
