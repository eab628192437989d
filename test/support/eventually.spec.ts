import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { eventually, hasExited } from './eventually.js';

/** A real child process that has ended, by `script`'s own exit or by `signal`. */
async function endedProcess(script: string, signal?: NodeJS.Signals): Promise<ChildProcess> {
  const proc = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
  const exited = once(proc, 'exit');
  if (signal) proc.kill(signal);
  await exited;
  return proc;
}

describe('eventually', () => {
  it('returns the first value that is not false, after checks that threw or were false', async () => {
    let calls = 0;
    const value = await eventually(
      () => {
        calls++;
        if (calls === 1) throw new Error('not yet');
        return calls === 2 ? false : `after ${calls}`;
      },
      5_000,
      1,
    );
    expect(value).toBe('after 3');
  });

  it('on timeout throws the last failure itself, or the timeout message with that failure as its cause', async () => {
    const failing = () => {
      throw new Error('connection refused');
    };
    await expect(eventually(failing, 20, 5)).rejects.toThrow('connection refused');
    const err = await eventually(failing, 20, 5, { timeoutMessage: () => 'the server did not start' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('the server did not start');
    expect(((err as Error).cause as Error).message).toBe('connection refused');
  });

  it('stops at once, without calling the check, when the awaited process exited or was killed', async () => {
    for (const proc of [
      await endedProcess('process.exit(3)'),
      await endedProcess('setInterval(() => {}, 1000)', 'SIGKILL'),
    ]) {
      expect(hasExited(proc)).toBe(true);
      let calls = 0;
      await expect(
        eventually(
          () => {
            calls++;
            return false;
          },
          30_000,
          10,
          {
            whileRunning: { proc, message: () => `exited at start (${proc.exitCode ?? proc.signalCode})` },
          },
        ),
      ).rejects.toThrow(/^exited at start \((3|SIGKILL)\)$/);
      expect(calls).toBe(0);
    }
  });
});
