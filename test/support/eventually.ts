/**
 * Thrown by a check to stop polling at once: what it waits for can no longer happen (the process it
 * waits on exited, say), so waiting out the deadline would only hide the cause.
 */
export class GiveUp extends Error {}

/**
 * Polls until `check` stops throwing and returns something other than false (that value is returned),
 * or the deadline passes: reads after writes are eventually consistent, and a fixed sleep would be both
 * slow and flaky. The one polling helper of the tests, e2e suites, their support and unit specs alike.
 */
export async function eventually<T>(
  check: () => Promise<T> | T,
  timeoutMs = 15_000,
  everyMs = 25,
): Promise<Exclude<T, false>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
      last = new Error(`condition still false after ${timeoutMs} ms`);
    } catch (err) {
      if (err instanceof GiveUp) throw err;
      last = err;
    }
    if (Date.now() > deadline) throw last instanceof Error ? last : new Error(String(last));
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Runs `sample` every `everyMs` beside a test's action (what health said while a server died) until
 * `stop` is called; `stop` resolves after the last sample. Polling to watch, where eventually polls to wait.
 */
export function sampling(sample: () => Promise<void>, everyMs: number): { stop: () => Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      await sample();
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
