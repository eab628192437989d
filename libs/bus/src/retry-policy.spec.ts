import { StoreError } from '@cdp/store';
import { InjectedFault, RejectedFault } from '@cdp/faults';
import { isDeterministicFailure, RetryPolicy } from './retry-policy.js';

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

  it('pauses the consumer only when several messages fail with nothing stored', () => {
    const p = policy();
    expect(p.settled(p.attempt(), [], [{ key: 'x', account: 'a' }]).pauseMs).toBe(0);
    expect(p.settled(p.attempt(), [], [{ key: 'y', account: 'b' }]).pauseMs).toBe(100);
    expect(p.settled(p.attempt(), [], [{ key: 'z', account: 'c' }]).pauseMs).toBe(200);
    expect(p.settled(p.attempt(), ['w'], []).pauseMs).toBe(0);
    expect(p.settled(p.attempt(), [], [{ key: 'x', account: 'a' }]).pauseMs).toBe(0);
    // One message failing again and again alone (a bad one) pauses nothing.
    expect(p.settled(p.attempt(), [], [{ key: 'x', account: 'a' }]).pauseMs).toBe(0);
  });

  it('pauses for one account whose backlog fails with nothing stored (the store away)', () => {
    const p = policy();
    expect(p.settled(p.attempt(), [], [{ key: 'm1', account: 'a' }]).pauseMs).toBe(0);
    expect(p.settled(p.attempt(), [], [{ key: 'm2', account: 'a' }]).pauseMs).toBe(100);
    expect(p.settled(p.attempt(), [], [{ key: 'm3', account: 'a' }]).pauseMs).toBe(200);
    expect(p.settled(p.attempt(), ['m1'], []).pauseMs).toBe(0);
  });
});
