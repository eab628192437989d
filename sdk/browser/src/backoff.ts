/** First retry after about a second, doubling up to a minute: a person never waits on it, a server is spared. */
export const BASE_DELAY_MS = 1000;
export const MAX_DELAY_MS = 60_000;

/**
 * Whether a failed delivery is worth repeating: the network (status 0), rate limits (429), a request
 * with the same Idempotency-Key still running (409) and server faults (5xx). Any other 4xx is final: the
 * same bytes would be refused again.
 */
export function isRetriable(status: number): boolean {
  return status === 0 || status === 429 || status === 409 || status >= 500;
}

/**
 * Delay before retry number `attempt` (1, 2, …): exponential, capped, with "equal jitter" (half fixed,
 * half random) so that many browsers failing together do not come back together. A `Retry-After` in
 * seconds is respected as a floor.
 */
export function retryDelay(attempt: number, random: number, retryAfter?: string | null): number {
  const exp = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.max(0, attempt - 1));
  const jittered = exp / 2 + (random * exp) / 2;
  const seconds = retryAfter ? Number(retryAfter) : NaN;
  return seconds >= 0 ? Math.max(seconds * 1000, jittered) : jittered;
}
