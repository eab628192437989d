/** An answer as a test reads it: supertest's response, or one a suite built from fetch. */
interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * A 400 naming each invalid record (spec NOTES, "Batch validation"): `detail.invalids` lists exactly
 * these, in order, each with a message for people beside the reason a program reads.
 */
export function expectInvalids(
  res: Pick<Answer, 'status' | 'body'>,
  invalids: { event: number; field: string | string[]; reason: unknown }[],
): void {
  expect(res.status).toBe(400);
  expect((res.body as { detail: { invalids: unknown } }).detail.invalids).toEqual(
    invalids.map((invalid) => ({ ...invalid, message: expect.any(String) })),
  );
}

/**
 * A refusal by the rate limiter (spec "Rate limits"): 429 with Retry-After, the RateLimit-* headers of
 * an empty bucket of `limit` requests a second, and the envelope naming the API `family` refused.
 */
export function expectTooManyRequests(res: Answer, limit: number, family: string): void {
  expect(res.status).toBe(429);
  expect(res.headers['retry-after']).toBe('1');
  expect(res.headers['ratelimit-limit']).toBe(String(limit));
  expect(res.headers['ratelimit-remaining']).toBe('0');
  expect(res.headers['ratelimit-reset']).toBe('1');
  expect(res.body).toEqual({
    title: 'Too Many Requests',
    status: 429,
    timestamp: expect.any(String),
    detail: { message: expect.stringContaining(family) },
  });
}
