import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { missingRoleNodeFlags, ROLE_NODE_FLAGS } from './index.js';

const BUILT = join(
  import.meta.dirname,
  '..',
  '..',
  '..',
  '..',
  'dist',
  'libs',
  'runtime',
  'src',
  'node-flags',
  'index.js',
);

/** Runs a script as a role's main starts: the built module first, then what the process ran with. */
function runStarted(
  nodeArgs: string[],
  env: Record<string, string> = {},
): { pid: number; execArgv: string[]; argv: string[]; childPid: number } {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-node-flags-'));
  const script = join(dir, 'main.mjs');
  writeFileSync(
    script,
    `const { startWithRoleNodeFlags } = await import(${JSON.stringify(pathToFileURL(BUILT).href)});
     startWithRoleNodeFlags();
     process.stdout.write(JSON.stringify({ pid: process.pid, execArgv: process.execArgv, argv: process.argv.slice(2) }));`,
  );
  // A shell prints the PID it started, so the test can tell a replaced process from a new one.
  const out = execFileSync(
    '/bin/sh',
    ['-c', 'echo $$; exec "$@"', 'sh', process.execPath, ...nodeArgs, script, 'a', 'b'],
    {
      env: { ...process.env, NODE_OPTIONS: '', ...env },
      encoding: 'utf8',
    },
  );
  const [childPid, json] = out.split('\n');
  return {
    ...(JSON.parse(json!) as { pid: number; execArgv: string[]; argv: string[] }),
    childPid: Number(childPid),
  };
}

describe('role node flags', () => {
  it('names the flags neither the command line nor NODE_OPTIONS gives, whatever value they give', () => {
    expect(missingRoleNodeFlags([], '')).toEqual(ROLE_NODE_FLAGS);
    expect(missingRoleNodeFlags(['--max-semi-space-size=16'], '')).toEqual([
      '--no-allocation-site-pretenuring',
    ]);
    expect(
      missingRoleNodeFlags(['--max_semi_space_size=64', '--no-allocation-site-pretenuring'], ''),
    ).toEqual([]);
    expect(missingRoleNodeFlags([], '--enable-source-maps --max-semi-space-size=32')).toEqual([
      '--no-allocation-site-pretenuring',
    ]);
    expect(missingRoleNodeFlags(['--allocation-site-pretenuring'], '--max-semi-space-size=32')).toEqual([]);
  });

  it('a process started without them carries on as the same process with them, its arguments intact', () => {
    expect(existsSync(BUILT)).toBe(true); // npm run build first
    const started = runStarted(['--enable-source-maps']);
    expect(started.pid).toBe(started.childPid);
    expect(started.execArgv).toEqual([...ROLE_NODE_FLAGS, '--enable-source-maps']);
    expect(started.argv).toEqual(['a', 'b']);
  });

  it("keeps an operator's own value", () => {
    const own = ['--max-semi-space-size=32', '--allocation-site-pretenuring'];
    expect(runStarted(own).execArgv).toEqual(own);
    // What NODE_OPTIONS gives is kept; a flag V8 refuses there is still added on the command line.
    expect(runStarted([], { NODE_OPTIONS: '--max-semi-space-size=32' }).execArgv).toEqual([
      '--no-allocation-site-pretenuring',
    ]);
  });
});
