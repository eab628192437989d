/**
 * The node flags every role runs with, defined here and nowhere else (docs/operations.md "Memory").
 *
 * `--max-semi-space-size=16`: 16 MB semi-spaces, V8's size on Node 20. From Node 22 V8 sizes the young
 * generation from the heap limit (64 MB semi-spaces, 128 MB of new space on a 24 GB machine), resident once
 * touched, for a process whose request bodies are garbage within milliseconds: it took the all-in-one
 * process's peak RSS under the ingest benchmark past 1 GB. V8 sizes the young generation when the heap is
 * created, so the flag has to be on the command line: `v8.setFlagsFromString` afterwards does not shrink it.
 *
 * `--no-allocation-site-pretenuring`: V8 allocates straight into the old generation from any allocation
 * site whose objects once survived a young collection in large numbers — which a burst of requests in flight
 * makes true of every site a request allocates at (GraphQL's parser and executor, Fastify's, the clients').
 * From then on each request's garbage is old: the API promoted ~2 MB at every scavenge and ran a
 * mark-compact about every second, the tail of the audience lookups (docs/benchmarks.md "Segments and
 * GraphQL"). Without it a request's objects die young, as they do. V8 refuses this flag in NODE_OPTIONS.
 */
export const ROLE_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=16',
  '--no-allocation-site-pretenuring',
];

/**
 * `--name=value` -> `--name`, `--no-name` -> `--name`: a flag the operator gave with another value, or
 * turned the other way, is theirs to keep.
 */
function flagName(flag: string): string {
  return (flag.split('=')[0] ?? flag).replaceAll('_', '-').replace(/^--no-/, '--');
}

/** The role flags neither the command line (`execArgv`) nor `NODE_OPTIONS` gives, with any value. */
export function missingRoleNodeFlags(execArgv: readonly string[], nodeOptions: string): string[] {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/).filter(Boolean)].map(flagName));
  return ROLE_NODE_FLAGS.filter((flag) => !given.has(flagName(flag)));
}

type Execve = (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => never;

/**
 * The first call of every role's main, before the app's modules load: a process started without the role
 * flags (by hand, by the image's CMD, by a compose `command`) replaces itself with `process.execve` — the
 * same PID, stdio and environment, so signals, a supervisor's PID file and a terminal's banner are
 * unchanged — with the flags first on the command line. Where it cannot (Node older than 22.15 has no
 * `process.execve`; an IPC channel from the parent would not survive the exec, so parents that talk to
 * their child pass `ROLE_NODE_FLAGS` themselves) it says so on stderr and runs on V8's defaults.
 */
export function startWithRoleNodeFlags(): void {
  // NODE_OPTIONS is the runtime's own setting (an operator's override of these flags), not the app's
  // configuration: @cdp/config never sees it.
  const missing = missingRoleNodeFlags(process.execArgv, process.env.NODE_OPTIONS ?? '');
  if (missing.length === 0) return;
  const execve = (process as { execve?: Execve }).execve;
  if (execve && !process.send) {
    try {
      execve(
        process.execPath,
        [process.execPath, ...missing, ...process.execArgv, ...process.argv.slice(1)],
        process.env,
      );
    } catch (err) {
      // A refused exec (a sandbox's seccomp policy, a binary gone since start) is no reason not to run.
      process.stderr.write(`node flags: restarting with them failed (${(err as Error).message})\n`);
    }
  }
  process.stderr.write(
    `node flags ${missing.join(' ')} not applied (start the role with them: docs/operations.md "Memory")\n`,
  );
}
