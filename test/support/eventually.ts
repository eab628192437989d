/**
 * Polls until `check` stops throwing and returns something other than false (that value is returned),
 * or the deadline passes: reads after writes are eventually consistent, and a fixed sleep would be both
 * slow and flaky. The one polling helper of the tests, e2e suites and unit specs alike.
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
      last = new Error('condition is still false');
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw last instanceof Error ? last : new Error(String(last));
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
