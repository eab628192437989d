import { pauseAfterPass, REFRESH_INTERVAL_MS, REFRESH_PAUSE_FACTOR } from './recommendations-refresh.job.js';
import { LEASE_MS } from './refresh-lease.js';

describe('the refresh job pause', () => {
  it('is a second after a short pass, as before pacing', () => {
    expect(pauseAfterPass(0)).toBe(REFRESH_INTERVAL_MS);
    expect(pauseAfterPass(120)).toBe(REFRESH_INTERVAL_MS);
    expect(pauseAfterPass(REFRESH_INTERVAL_MS / REFRESH_PAUSE_FACTOR)).toBe(REFRESH_INTERVAL_MS);
  });

  it('grows with a long pass, so the refresh takes at most a fifth of the store', () => {
    expect(pauseAfterPass(400)).toBe(1_600);
    const took = 1_000;
    expect(took / (took + pauseAfterPass(took))).toBeLessThanOrEqual(1 / 5);
  });

  it('stays under half the lease, which each pass renews', () => {
    expect(pauseAfterPass(2_400)).toBe(LEASE_MS / 2);
    expect(pauseAfterPass(60_000)).toBe(LEASE_MS / 2);
    expect(pauseAfterPass(60_000)).toBeLessThan(LEASE_MS);
  });
});
