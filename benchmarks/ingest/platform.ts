import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROLE_NODE_FLAGS } from '@cdp/runtime/node-flags';

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** A process of the platform under test. */
export interface RoleProcess {
  role: string;
  pid: number;
}

/** The platform under test, in processes of its own (never the bench's): the load generator is elsewhere. */
export interface Platform {
  apiUrl: string;
  /** The data directory (chDB store under `store/chdb`). */
  dataDir: string;
  roles: RoleProcess[];
  /** Embedded: event records stored so far, as the process reports them (undefined scaled out). */
  storedEvents?: () => number;
  stop: () => Promise<void>;
}

/**
 * One role as its app's main runs it (`npm start`, `start:scaled`: with the roles' node flags, given here
 * because a main cannot restart itself with them while it holds this IPC channel), with the given
 * environment; resolves once its `/health` answers 200. `BENCH_NODE_ARGS` adds node flags (a CPU profile,
 * heap limits; a later `--max-semi-space-size` overrides the roles' one).
 */
async function spawnRole(
  entry: string,
  env: Record<string, string>,
  port: number,
): Promise<{ child: ChildProcess; role: RoleProcess }> {
  const child = spawn(
    process.execPath,
    [
      ...ROLE_NODE_FLAGS,
      ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      join(ROOT, 'dist', entry),
    ],
    {
      env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...env, PORT: String(port) },
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    },
  );
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode} while starting`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200)
        return { child, role: { role: entry.split('/')[1]!, pid: child.pid! } };
    } catch {
      // starting
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${entry} did not become ready`);
}

async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGTERM');
        }),
    ),
  );
}

const freePort = () => 39000 + Math.floor(Math.random() * 1000) * 2;

/**
 * The all-in-one process as `npm start` runs it (apps/cdp's app and main, through embedded.main.ts which
 * also reports its stored records), on a fresh data directory.
 */
export async function startEmbedded(env: Record<string, string>): Promise<Platform> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cdp-bench-embedded-'));
  const port = freePort();
  const { child } = await spawnRole(
    'benchmarks/ingest/embedded.main.js',
    { ...env, CDP_DATA_DIR: dataDir },
    port,
  );
  let stored = 0;
  child.on('message', (m: { storedEvents?: number }) => (stored = m.storedEvents ?? stored));
  return {
    apiUrl: `http://127.0.0.1:${port}`,
    dataDir,
    roles: [{ role: 'cdp', pid: child.pid! }],
    storedEvents: () => stored,
    stop: () => stopAll([child]),
  };
}

/** The API and the processor as child processes on the machine's NATS and Redis, as `start:scaled` runs them. */
export async function startScaled(env: Record<string, string>): Promise<Platform> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cdp-bench-scaled-'));
  const common = { CDP_BUS: 'nats', CDP_IDENTITY: 'redis', CDP_STORE: 'chdb', CDP_DATA_DIR: dataDir, ...env };
  const port = freePort();
  const processor = await spawnRole('apps/processor/src/main.js', common, port + 1);
  try {
    const api = await spawnRole('apps/api/src/main.js', common, port);
    return {
      apiUrl: `http://127.0.0.1:${port}`,
      dataDir,
      roles: [api.role, processor.role],
      stop: () => stopAll([api.child, processor.child]),
    };
  } catch (err) {
    await stopAll([processor.child]);
    throw err;
  }
}

/**
 * A process's peak resident set so far (the kernel's high-water mark, VmHWM in /proc/<pid>/status), bytes.
 * Exact, not sampled: it catches a spike between two polls.
 */
export function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(status);
  if (!kb) throw new Error(`no VmHWM for process ${pid}`);
  return Number(kb[1]) * 1024;
}

/** CPU seconds a process has used so far, all its threads (user + system, /proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds each thread of a process has used so far (user + system), by thread id, with its name. */
export function threadCpuSeconds(pid: number): Map<string, { name: string; seconds: number }> {
  const threads = new Map<string, { name: string; seconds: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    threads.set(tid, { name: tid === String(pid) ? MAIN_THREAD : name, seconds });
  }
  return threads;
}

const MAIN_THREAD = '(main)';

/**
 * The CPU seconds between two readings of threadCpuSeconds, by kind of thread: the main thread (HTTP,
 * bus, processor), the codec thread (Node names a worker thread `WorkerThread`), V8's helpers (`V8Worker`:
 * concurrent GC marking and sweeping, compilation), chDB's merges (its `MergeMutate` pool), and
 * everything else, which in these processes is chDB's other pools (inserts, reads) and the libuv threads
 * that run its calls and the file writes. Tables before the merges were counted apart show the last two
 * together as `chDB + I/O`. A thread that ended in between is left out (the codec thread ends only with
 * the process).
 */
export function cpuByThreadKind(
  before: Map<string, { name: string; seconds: number }>,
  after: Map<string, { name: string; seconds: number }>,
): Record<ThreadKind, number> {
  const out = noThreadCpu();
  for (const [tid, { name, seconds }] of after) {
    const kind: ThreadKind =
      name === MAIN_THREAD
        ? 'main'
        : name === 'WorkerThread'
          ? 'codec'
          : name === 'V8Worker'
            ? 'GC helpers'
            : name === 'MergeMutate'
              ? 'chDB merges'
              : 'chDB other + I/O';
    out[kind] += seconds - (before.get(tid)?.seconds ?? 0);
  }
  return out;
}

export type ThreadKind = 'main' | 'codec' | 'GC helpers' | 'chDB merges' | 'chDB other + I/O';

/** Zero seconds of every kind of thread, in the order the benchmark's columns show them. */
export function noThreadCpu(): Record<ThreadKind, number> {
  return { main: 0, codec: 0, 'GC helpers': 0, 'chDB merges': 0, 'chDB other + I/O': 0 };
}

/** CPU seconds the whole machine has been busy so far, and the seconds it has been up times its cores (/proc/stat). */
export function machineCpu(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const idle = cpu[3]! + cpu[4]!; // idle + iowait
  const total = cpu.reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / CLOCK_TICKS, total: total / CLOCK_TICKS };
}

/** The kernel's clock ticks a second for /proc's CPU times (USER_HZ: 100 on Linux's supported platforms). */
const CLOCK_TICKS = 100;

/** Starts a new peak: the kernel sets VmHWM back to the current RSS (`5` into /proc/<pid>/clear_refs). */
export function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}
