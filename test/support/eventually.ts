import type { ChildProcess } from 'node:child_process';

/** What a poll may say beyond its check: how its timeout reads, and a process it cannot outlive. */
export interface PollOptions {
  /**
   * The message of the error thrown when the deadline passes, worded for what was awaited; the check's
   * last failure is kept as its `cause`, not swallowed. Without it, that last failure is thrown itself.
   */
  timeoutMessage?: () => string;
  /**
   * A child process the awaited thing depends on (a server that is starting): once it has exited,
   * polling stops with `message`, as waiting out the deadline would only hide why it never came.
   * Checked before each call of the check, so a process that exited is never polled.
   */
  whileRunning?: { proc: ChildProcess; message: () => string };
}

/** Whether a child process has ended: `exitCode` stays null for one killed by a signal. */
export function hasExited(proc: ChildProcess): boolean {
  return proc.exitCode !== null || proc.signalCode !== null;
}

/**
 * Polls until `check` stops throwing and returns something other than false (that value is returned),
 * or the deadline passes: reads after writes are eventually consistent, and a fixed sleep would be both
 * slow and flaky. The one polling helper of the tests: e2e suites, their support (servers and apps
 * waited for at start) and unit specs alike.
 */
export async function eventually<T>(
  check: () => Promise<T> | T,
  timeoutMs = 15_000,
  everyMs = 25,
  { timeoutMessage, whileRunning }: PollOptions = {},
): Promise<Exclude<T, false>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    if (whileRunning && hasExited(whileRunning.proc)) throw new Error(whileRunning.message());
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
      last = new Error('condition is still false');
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      if (timeoutMessage) throw new Error(timeoutMessage(), { cause: last });
      throw last instanceof Error ? last : new Error(String(last));
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
