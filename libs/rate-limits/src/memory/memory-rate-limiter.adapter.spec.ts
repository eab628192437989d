import { rateLimiterContract } from '../rate-limiter.contract.js';
import { MemoryRateLimiter } from './memory-rate-limiter.adapter.js';

rateLimiterContract('memory', (now) => Promise.resolve(new MemoryRateLimiter(now)));

describe('MemoryRateLimiter on a controlled clock', () => {
  it('refills continuously and reports reset and retry-after in whole seconds', async () => {
    let now = 1_000_000;
    const limiter = new MemoryRateLimiter(() => now);
    const allowance = { rate: 10, burst: 10 };
    for (let i = 0; i < 10; i++) expect((await limiter.take('a', 'profiles', allowance)).allowed).toBe(true);
    expect(await limiter.take('a', 'profiles', allowance)).toEqual({
      allowed: false,
      limit: 10,
      remaining: 0,
      resetSeconds: 1,
      retryAfterSeconds: 1,
    });
    now += 99;
    expect((await limiter.take('a', 'profiles', allowance)).allowed).toBe(false);
    now += 1;
    expect((await limiter.take('a', 'profiles', allowance)).allowed).toBe(true);
    now += 10_000;
    expect((await limiter.take('a', 'profiles', allowance)).remaining).toBe(9);
  });
});
