import { Sampler } from './sampler.js';

describe('Sampler', () => {
  it('passes every record under the bound, then samples and says so, then says when it stops', () => {
    let now = 1_000_000;
    const sampler = new Sampler(10, () => now);
    const first = Array.from({ length: 10 }, () => sampler.take());
    expect(first.every((t) => t.pass && t.every === 1 && !t.notice)).toBe(true);
    const over = sampler.take();
    expect(over.notice?.sampling).toEqual({ every: 2, bound: 10 });
    expect(over.notice?.message).toMatch(/1 record in 2/);
    for (let i = 0; i < 89; i++) sampler.take(); // 100 in this second
    now += 1000;
    const next = sampler.take();
    expect(next.every).toBe(10); // last second's 100/s over a bound of 10
    expect(next.notice?.message).toMatch(/about 100\/s.*1 record in 10/);
    const passed = [next, ...Array.from({ length: 49 }, () => sampler.take())].filter((t) => t.pass).length;
    expect(passed).toBe(5);
    now += 1000;
    sampler.take(); // 50/s: still over the bound
    now += 5000;
    const quiet = sampler.take();
    expect(quiet.every).toBe(1);
    expect(quiet.notice).toMatchObject({ sampling: null, message: 'showing every record again' });
  });
});
