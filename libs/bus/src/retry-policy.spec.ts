import { StoreError } from '@cdp/store';
import { InjectedFault, RejectedFault } from '@cdp/faults';
import { AccountHolds, isDeterministicFailure, RetryPolicy } from './retry-policy.js';

describe('which failures are deterministic', () => {
  it('takes the engine code of a store failure: parse and type errors yes, outages no', () => {
    expect(isDeterministicFailure(new StoreError('Code: 6. Cannot parse input', 6))).toBe(true);
    expect(isDeterministicFailure(new StoreError('Code: 53. Type mismatch', 53))).toBe(true);
    expect(isDeterministicFailure(new StoreError('Code: 241. Memory limit exceeded', 241))).toBe(false);
    expect(isDeterministicFailure(new StoreError('Code: 252. Too many parts', 252))).toBe(false);
    expect(isDeterministicFailure(new StoreError('connect ECONNREFUSED', undefined))).toBe(false);
  });

  it('follows causes, and tells a rejected record from an injected outage', () => {
    const wrapped = new Error('write failed', { cause: new StoreError('bad value', 117) });
    expect(isDeterministicFailure(wrapped)).toBe(true);
    expect(isDeterministicFailure(new RejectedFault('processor.message', 'acct'))).toBe(true);
    expect(isDeterministicFailure(new InjectedFault('store.transport.insert'))).toBe(false);
    expect(isDeterministicFailure(new Error('timeout'))).toBe(false);
    expect(isDeterministicFailure('a string')).toBe(false);
  });
});

describe('RetryPolicy', () => {
  const policy = () => new RetryPolicy({ maxStrikes: 3, baseMs: 100, capMs: 1000 });

  it('backs off exponentially up to the cap', () => {
    const p = policy();
    const delays = [1, 2, 3, 4, 5].map(() => {
      const t = p.attempt();
      return p.settled(t, [], [{ key: 'm', account: 'a' }]).decisions.get('m')!.delayMs;
    });
    expect(delays).toEqual([100, 200, 400, 800, 1000]);
  });

  it('never gives up a message while nothing else is stored, however often it fails', () => {
    const p = policy();
    for (let i = 0; i < 50; i++) {
      const t = p.attempt();
      const { decisions } = p.settled(
        t,
        [],
        [
          { key: 'm1', account: 'a' },
          { key: 'm2', account: 'b' },
        ],
      );
      expect(decisions.get('m1')!.deadLetter).toBe(false);
    }
  });

  it('gives up a message that keeps failing while others are stored', () => {
    const p = policy();
    const outcomes: boolean[] = [];
    // The first failure is no strike (nothing was stored during its attempt); each later one is.
    for (let i = 0; i < 4; i++) {
      p.settled(p.attempt(), [`ok${i}`], []);
      outcomes.push(
        p.settled(p.attempt(), [], [{ key: 'bad', account: 'a' }]).decisions.get('bad')!.deadLetter,
      );
    }
    expect(outcomes).toEqual([false, false, false, true]);
  });

  it('pauses the consumer only when several accounts fail with nothing stored', () => {
    const p = policy();
    expect(p.settled(p.attempt(), [], [{ key: 'x', account: 'a' }]).pauseMs).toBe(0);
    expect(p.settled(p.attempt(), [], [{ key: 'y', account: 'b' }]).pauseMs).toBe(100);
    expect(p.settled(p.attempt(), [], [{ key: 'z', account: 'c' }]).pauseMs).toBe(200);
    expect(p.settled(p.attempt(), ['w'], []).pauseMs).toBe(0);
    expect(p.settled(p.attempt(), [], [{ key: 'x', account: 'a' }]).pauseMs).toBe(0);
  });
});

describe('AccountHolds', () => {
  it("holds an account's later messages behind its failed one, and no other account", () => {
    const h = new AccountHolds();
    h.hold('a', 5, 1000);
    expect(h.waitMs('b', 6, 0)).toBe(0);
    expect(h.waitMs('a', 4, 0)).toBe(0); // older than the failed one
    expect(h.waitMs('a', 5, 0)).toBe(1000);
    expect(h.waitMs('a', 5, 1000)).toBe(0);
    expect(h.waitMs('a', 7, 1000)).toBeGreaterThan(0); // still behind 5 until 5 is settled
    h.release('a', 5);
    expect(h.waitMs('a', 7, 1000)).toBe(0);
    expect(h.size).toBe(0);
  });

  it('keeps the messages held behind a failed one in their order, and gives up on one that does not come back in its grace', () => {
    const h = new AccountHolds();
    h.hold('a', 5, 1000);
    h.hold('a', 9, 1100, 500); // sent back behind 5, due again at 1100
    h.hold('a', 7, 1200, 500);
    h.release('a', 5); // 5 stored
    expect(h.waitMs('a', 9, 1300)).toBeGreaterThan(0); // 7 comes first, whichever is back first
    expect(h.waitMs('a', 7, 1300)).toBe(0);
    h.release('a', 7);
    expect(h.waitMs('a', 9, 1300)).toBe(0);
    // 9 never comes back (settled elsewhere): past its grace, the account's later messages go.
    expect(h.waitMs('a', 12, 1500)).toBeGreaterThan(0);
    expect(h.waitMs('a', 12, 1601)).toBe(0);
    expect(h.size).toBe(0);
  });

  it('lets a held message go right behind its predecessor when that one is going too (same batch, or handed over)', () => {
    const h = new AccountHolds();
    h.hold('a', 7, 100, 500);
    h.hold('a', 9, 100, 500);
    expect(h.waitMs('a', 9, 200)).toBeGreaterThan(0);
    expect(h.waitMs('a', 9, 200, new Set([7]))).toBe(0);
    expect(h.waitMs('a', 11, 200, new Set([7]))).toBeGreaterThan(0); // 9 is not going
    expect(h.waitMs('a', 11, 200, new Set([7, 9]))).toBe(0);
  });
});
