import type { RateLimiter } from './rate-limiter.port.js';

/** Account names unique to this run, since a shared Redis outlives it. */
const run = Math.random().toString(36).slice(2, 8);

/**
 * What every RateLimiter driver owes: a bucket per account and family, burst then refill. `open`
 * gives the driver a clock the tests move, so no assertion depends on how fast the test runs.
 */
export function rateLimiterContract(name: string, open: (now: () => number) => Promise<RateLimiter>): void {
  describe(`RateLimiter contract: ${name}`, () => {
    let clock = 1_000_000;
    const now = () => clock;
    beforeEach(() => {
      clock = 1_000_000;
    });

    it('lets exactly a burst through, then refuses with the wait until the next token', async () => {
      const limiter = await open(now);
      // 1 request/s: the next token is a whole second away, so the edge cannot blur while the test runs.
      const allowance = { rate: 1, burst: 1 };
      const first = await limiter.take(`edge${run}`, 'compliance', allowance);
      expect(first).toEqual({ allowed: true, limit: 1, remaining: 0, resetSeconds: 1, retryAfterSeconds: 0 });
      const second = await limiter.take(`edge${run}`, 'compliance', allowance);
      expect(second).toMatchObject({ allowed: false, limit: 1, remaining: 0, retryAfterSeconds: 1 });
      expect(second.resetSeconds).toBe(1);
    });

    it('counts down the remaining tokens of a burst of ten', async () => {
      const limiter = await open(now);
      const allowance = { rate: 10, burst: 10 };
      const takes = [];
      for (let i = 0; i < 11; i++) takes.push(await limiter.take(`ten${run}`, 'profiles', allowance));
      expect(takes.map((t) => t.allowed)).toEqual([...Array<boolean>(10).fill(true), false]);
      expect(takes.slice(0, 10).map((t) => t.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      expect(takes.every((t) => t.limit === 10)).toBe(true);
    });

    it('keeps accounts and families apart', async () => {
      const limiter = await open(now);
      const allowance = { rate: 1, burst: 1 };
      expect((await limiter.take(`a${run}`, 'profiles', allowance)).allowed).toBe(true);
      expect((await limiter.take(`a${run}`, 'profiles', allowance)).allowed).toBe(false);
      expect((await limiter.take(`b${run}`, 'profiles', allowance)).allowed).toBe(true);
      expect((await limiter.take(`a${run}`, 'compliance', allowance)).allowed).toBe(true);
    });

    it('gives tokens back at the rate', async () => {
      const limiter = await open(now);
      const allowance = { rate: 20, burst: 1 };
      expect((await limiter.take(`refill${run}`, 'profiles', allowance)).allowed).toBe(true);
      expect((await limiter.take(`refill${run}`, 'profiles', allowance)).allowed).toBe(false);
      // One token per 50 ms: not back a millisecond sooner, back at 50 ms.
      clock += 49;
      expect((await limiter.take(`refill${run}`, 'profiles', allowance)).allowed).toBe(false);
      clock += 1;
      expect((await limiter.take(`refill${run}`, 'profiles', allowance)).allowed).toBe(true);
      expect((await limiter.take(`refill${run}`, 'profiles', allowance)).allowed).toBe(false);
    });

    it('of many concurrent requests, lets exactly the burst through', async () => {
      const limiter = await open(now);
      const allowance = { rate: 1, burst: 5 };
      const takes = await Promise.all(
        Array.from({ length: 30 }, () => limiter.take(`race${run}`, 'compliance', allowance)),
      );
      expect(takes.filter((t) => t.allowed).length).toBe(5);
    });
  });
}
