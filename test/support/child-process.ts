import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../benchmarks/lib/free-port.js';
import { eventually, hasExited } from './eventually.js';

// One way to find a free port for tests and benchmarks alike (the suites import it from here).
export { freePort };

const ROOT = join(import.meta.dirname, '..', '..');

/** A built app (`npm run build` first) running as a child process, as `npm start` runs it. */
export class ChildApp {
  private exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly proc: ChildProcess,
    readonly baseUrl: string,
    /** The child's stdout and stderr go to a file: a pipe the test stops reading could block it. */
    readonly logFile: string,
  ) {
    this.exit = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  }

  output(): string {
    return readFileSync(this.logFile, 'utf8');
  }

  static async start(entry: string, env: Record<string, string>, readyPath = '/health'): Promise<ChildApp> {
    const port = env.PORT ? Number(env.PORT) : await freePort();
    const logFile = join(mkdtempSync(join(tmpdir(), 'cdp-child-')), 'output.log');
    const out = openSync(logFile, 'a');
    const proc = spawn(process.execPath, [join(ROOT, 'dist', entry)], {
      cwd: ROOT,
      env: {
        ...process.env,
        LOG_LEVEL: process.env.CHILD_LOG_LEVEL ?? 'warn',
        ...env,
        PORT: String(port),
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', out, out],
    });
    const app = new ChildApp(proc, `http://127.0.0.1:${port}`, logFile);
    // A boot may wait for the JetStream replicas lock of a process that died holding it: at most twice
    // the lock's 30 s TTL (libs/drivers/src/nats-cluster.ts), logged at warn past 5 s.
    try {
      await eventually(
        async () => (await fetch(`${app.baseUrl}${readyPath}`)).status === 200, // throws while not listening
        65_000,
        50,
        {
          timeoutMessage: () => `the app did not become ready:\n${app.output()}`,
          whileRunning: { proc, message: () => `the app exited at start:\n${app.output()}` },
        },
      );
    } catch (err) {
      // Not left running: the suite that failed here has no handle to stop it with.
      if (!hasExited(proc)) await app.kill('SIGKILL');
      throw err;
    }
    return app;
  }

  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.proc.kill(signal);
    return this.exit;
  }

  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exit;
  }
}
