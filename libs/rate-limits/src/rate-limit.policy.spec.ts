import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileMetadataStore } from '@cdp/metadata/file';
import { OutageMetadataStore } from '@cdp/metadata';
import { RATE_POLICY_CACHE_MS, RateLimitPolicy } from './rate-limit.policy.js';

describe('RateLimitPolicy: the rates a replica limits by', () => {
  let store: FileMetadataStore;
  let shared: OutageMetadataStore;
  let t: number;
  let replica: RateLimitPolicy;
  let admin: RateLimitPolicy;
  beforeEach(() => {
    store = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-rates-')));
    shared = new OutageMetadataStore(store);
    t = 1_000_000;
    replica = new RateLimitPolicy(shared, () => t);
    admin = new RateLimitPolicy(store);
  });
  afterEach(() => store.close());

  it('takes a change made on another replica within 5 seconds; its own changes at once', async () => {
    expect(await replica.allowance('acc', 'profiles')).toEqual({ rate: 10, burst: 10 });
    await admin.change('acc', { profiles: 50 });
    t += RATE_POLICY_CACHE_MS;
    expect(await replica.allowance('acc', 'profiles')).toEqual({ rate: 10, burst: 10 });
    t += 1;
    expect(await replica.allowance('acc', 'profiles')).toEqual({ rate: 50, burst: 50 });
    await replica.change('acc', { events: 7 });
    expect(await replica.allowance('acc', 'events')).toEqual({ rate: 7, burst: 7 });
  });

  it('reads the store once for concurrent requests of one account', async () => {
    await admin.change('acc', { profiles: 3 });
    const all = await Promise.all(Array.from({ length: 20 }, () => replica.allowance('acc', 'profiles')));
    expect(all.every((a) => a?.rate === 3)).toBe(true);
    expect(shared.gets).toBe(1);
  });

  it('limits by the last rates read while the store is unreachable, by the defaults when none were', async () => {
    await admin.change('acc', { profiles: 3 });
    expect(await replica.allowance('acc', 'profiles')).toEqual({ rate: 3, burst: 3 });
    shared.reachable = false;
    t += 60_000;
    expect(await replica.allowance('acc', 'profiles')).toEqual({ rate: 3, burst: 3 });
    expect(await replica.allowance('other', 'profiles')).toEqual({ rate: 10, burst: 10 });
    shared.reachable = true;
    await admin.change('acc', { profiles: 4 });
    expect(await replica.allowance('acc', 'profiles')).toEqual({ rate: 4, burst: 4 });
  });
});
