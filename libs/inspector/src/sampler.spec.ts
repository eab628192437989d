import { Sampler, samplingKey } from './sampler.js';

describe('Sampler', () => {
  it('passes every record under the bound, then samples and says so, then says when it stops', () => {
    let now = 1_000_000;
    const sampler = new Sampler(10, () => now);
    const first = Array.from({ length: 10 }, () => sampler.take());
    expect(first.every((t) => t.pass && t.every === 1 && !t.notice)).toBe(true);
    const over = sampler.take();
    expect(over.pass).toBe(false); // at most `bound` a second
    expect(over.notice?.sampling).toEqual({ every: 2, bound: 10 });
    expect(over.notice?.message).toMatch(/1 record in 2, at most 10 a second/);
    const rest = Array.from({ length: 89 }, () => sampler.take()); // 100 in this second
    expect(rest.some((t) => t.pass)).toBe(false);
    now += 1000;
    const second = [sampler.take(), ...Array.from({ length: 99 }, () => sampler.take())];
    expect(second[0]!.every).toBe(16); // last second's 100/s over a bound of 10, rounded up to a power of two
    expect(second[0]!.notice?.message).toMatch(/about 100\/s.*1 record in 16/);
    const passed = second.filter((t) => t.pass).length;
    expect(passed).toBeGreaterThanOrEqual(6);
    expect(passed).toBeLessThanOrEqual(7);
    now += 5000;
    sampler.take(); // 100 records over the last 5 seconds: 20/s, still over
    now += 1000;
    const quiet = sampler.take();
    expect(quiet.every).toBe(1);
    expect(quiet.notice).toMatchObject({ sampling: null, message: 'showing every record again' });
  });

  it('picks records by their key, so two processes sampling apart pick the same ones', () => {
    let now = 0;
    const api = new Sampler(10, () => now);
    const processor = new Sampler(10, () => now);
    for (const s of [api, processor]) for (let i = 0; i < 200; i++) s.take(i); // 200/s: every 32
    now += 1000;
    const keys = Array.from({ length: 150 }, (_, i) => samplingKey('req-1', i));
    const byApi = keys.filter((k) => api.take(k).pass);
    const byProcessor = keys.filter((k) => processor.take(k).pass);
    expect(byApi.length).toBeGreaterThan(0);
    expect(byProcessor).toEqual(byApi);
    // A v2 request of several kinds names its messages `<request id>.<kind>`: the same key.
    expect(samplingKey('req-1.customers', 3)).toBe(samplingKey('req-1', 3));
  });
});
