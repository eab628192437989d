import { jest } from '@jest/globals';
import { join } from 'node:path';
import { runSoak } from '../benchmarks/crash/soak.js';

/**
 * The repeated-SIGKILL soak, small (benchmarks/crash: `npm run soak:crash` runs 20 kills over 200k
 * events): the embedded server, SIGKILLed five times from outside or at random write boundaries
 * while it takes 20k events of new customers, loses and doubles none of what it acknowledged.
 */
jest.setTimeout(300_000);

// One wiring: it SIGKILLs the all-in-one server; scaled out, crash-consistency.e2e-spec.ts kills the processor.
describe('repeated SIGKILL of the embedded server (soak, small)', () => {
  it('keeps every acknowledged event once and every acknowledged customer live once', async () => {
    const result = await runSoak({
      events: 20_000,
      kills: 5,
      batch: 200,
      clients: 4,
      seed: 11,
      apiSample: 200,
      root: join(import.meta.dirname, '..'),
    });
    expect(result.kills.outside + result.kills.faultPoint).toBeGreaterThanOrEqual(5);
    expect(result.events.acknowledged).toBeGreaterThanOrEqual(20_000);
    expect(result.events).toMatchObject({ lost: 0, doubled: 0 });
    expect(result.customers).toMatchObject({ lost: 0, doubled: 0, apiMissing: 0 });
    expect(result.customers.live).toBe(result.customers.acknowledged);
  });
});
