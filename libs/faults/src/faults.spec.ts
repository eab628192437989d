import { afterEach, describe, expect, it } from '@jest/globals';
import { configureFaults, faultPoint, faultPointHits, InjectedFault, parseFaults } from './faults.js';

describe('fault points', () => {
  afterEach(() => configureFaults([]));

  it('parses rules and refuses a malformed one', () => {
    expect(parseFaults('store.insert.events:kill@3, bus.ack:throw~60000')).toEqual([
      { point: 'store.insert.events', action: 'kill', at: 3, forMs: 0 },
      { point: 'bus.ack', action: 'throw', at: 1, forMs: 60000 },
    ]);
    expect(parseFaults(undefined)).toEqual([]);
    expect(() => parseFaults('store:explode')).toThrow('point:kill|throw');
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
});
