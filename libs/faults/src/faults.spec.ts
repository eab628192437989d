import { afterEach, describe, expect, it } from '@jest/globals';
import {
  configureFaults,
  faultPoint,
  faultPointHits,
  InjectedFault,
  parseFaults,
  RejectedFault,
} from './faults.js';

describe('fault points', () => {
  afterEach(() => configureFaults([]));

  it('parses rules and refuses a malformed one', () => {
    expect(parseFaults('store.insert.events:kill@3, bus.ack:throw~60000')).toEqual([
      { point: 'store.insert.events', action: 'kill', at: 3, forMs: 0 },
      { point: 'bus.ack', action: 'throw', at: 1, forMs: 60000 },
    ]);
    expect(parseFaults(undefined)).toEqual([]);
    expect(() => parseFaults('store:explode')).toThrow('point[scope]:kill|throw|reject');
  });

  it('does nothing while no rule is armed', () => {
    expect(() => faultPoint('store.insert.events')).not.toThrow();
    expect(faultPointHits().size).toBe(0);
  });

  it('throws on the Nth hit only, and counts every point reached', () => {
    configureFaults(parseFaults('store.insert.*:throw@2'));
    faultPoint('store.insert.links');
    expect(() => faultPoint('store.insert.events')).toThrow(InjectedFault);
    faultPoint('store.insert.events');
    faultPoint('identity.settle');
    expect(Object.fromEntries(faultPointHits())).toEqual({
      'store.insert.links': 1,
      'store.insert.events': 2,
      'identity.settle': 1,
    });
  });

  it('keeps refusing for a while from the first firing, then lets writes through', () => {
    let now = 1000;
    configureFaults(parseFaults('store.insert.*:throw~60000'), () => now);
    expect(() => faultPoint('store.insert.events')).toThrow(InjectedFault);
    now += 59_999;
    expect(() => faultPoint('store.insert.links')).toThrow(InjectedFault);
    now += 1;
    expect(() => faultPoint('store.insert.events')).not.toThrow();
  });

  it('parses a scope and the reject action', () => {
    expect(parseFaults('processor.message[acct_1]:reject~600000')).toEqual([
      { point: 'processor.message', scope: 'acct_1', action: 'reject', at: 1, forMs: 600000 },
    ]);
    expect(() => parseFaults('processor.message[]:reject')).toThrow();
  });

  it('a scoped rule fires only for its scope, and reject raises a deterministic failure', () => {
    configureFaults(parseFaults('processor.message[poisoned]:reject~60000'));
    expect(() => faultPoint('processor.message', 'healthy')).not.toThrow();
    expect(() => faultPoint('processor.message')).not.toThrow();
    const err = (() => {
      try {
        faultPoint('processor.message', 'poisoned');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(RejectedFault);
    expect((err as RejectedFault).deterministic).toBe(true);
    expect(() => faultPoint('processor.message', 'poisoned')).toThrow(RejectedFault);
    expect(() => faultPoint('processor.message', 'healthy')).not.toThrow();
  });

  it('an unscoped throw is transient: InjectedFault is not marked deterministic', () => {
    configureFaults(parseFaults('store.transport.insert:throw'));
    expect(() => faultPoint('store.transport.insert')).toThrow(InjectedFault);
    expect((new InjectedFault('x') as { deterministic?: boolean }).deterministic).toBeUndefined();
  });
});
