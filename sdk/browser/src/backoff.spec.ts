import { BASE_DELAY_MS, isRetriable, MAX_DELAY_MS, retryDelay } from './backoff.js';

describe('isRetriable', () => {
  it.each([0, 409, 429, 500, 502, 503, 504])('retries %i', (status) =>
    expect(isRetriable(status)).toBe(true),
  );
  it.each([200, 202, 400, 401, 403, 404, 413, 415, 422])('never retries %i', (status) =>
    expect(isRetriable(status)).toBe(false),
  );
});

describe('retryDelay', () => {
  it('doubles from about a second, with half of it random', () => {
    for (let attempt = 1; attempt <= 5; attempt++) {
      const full = BASE_DELAY_MS * 2 ** (attempt - 1);
      expect(retryDelay(attempt, 0)).toBe(full / 2);
      expect(retryDelay(attempt, 1)).toBe(full);
    }
  });

  it('is capped at a minute whatever the attempt', () => {
    expect(retryDelay(30, 1)).toBe(MAX_DELAY_MS);
    expect(retryDelay(1000, 0.5)).toBeLessThanOrEqual(MAX_DELAY_MS);
  });

  it('waits at least what Retry-After says', () => {
    expect(retryDelay(1, 0, '7')).toBe(7000);
    expect(retryDelay(8, 1, '1')).toBe(retryDelay(8, 1));
    expect(retryDelay(1, 0, 'soon')).toBe(retryDelay(1, 0));
  });
});
