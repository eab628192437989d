import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { METADATA_CACHE_CLOCK, MetadataCache, MetadataCacheClock } from './metadata-cache.js';

/** A clock the test moves; it starts far from 0 (lru-cache reads a start of 0 as "never stale"). */
function testClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: Error) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('MetadataCache', () => {
  it('reads once for concurrent misses of one key (single flight), and once per key', async () => {
    const pending = new Map<string, ReturnType<typeof deferred<string>>>();
    const loads: string[] = [];
    const cache = new MetadataCache<string>({
      ttlMs: 5_000,
      load: (key) => {
        loads.push(key);
        const d = deferred<string>();
        pending.set(key, d);
        return d.promise;
      },
    });
    const reads = [...Array.from({ length: 10 }, () => cache.get('a')), cache.get('b'), cache.get('b')];
    expect(loads).toEqual(['a', 'b']);
    pending.get('a')!.resolve('A');
    pending.get('b')!.resolve('B');
    expect(await Promise.all(reads)).toEqual([...Array<string>(10).fill('A'), 'B', 'B']);
    expect(await cache.get('a')).toBe('A');
    expect(loads).toEqual(['a', 'b']);
  });

  it('uses a copy for its ttl, then reads again; `fresh` reads at once', async () => {
    const clock = testClock();
    let version = 1;
    let loads = 0;
    const cache = new MetadataCache<number>({
      ttlMs: 5_000,
      now: clock.now,
      load: () => {
        loads++;
        return Promise.resolve(version);
      },
    });
    expect(await cache.get('k')).toBe(1);
    version = 2;
    clock.advance(5_000);
    expect(await cache.get('k')).toBe(1);
    expect(loads).toBe(1);
    clock.advance(1);
    expect(await cache.get('k')).toBe(2);
    expect(loads).toBe(2);
    version = 3;
    expect(await cache.get('k', true)).toBe(3);
    expect(loads).toBe(3);
  });

  it('caches "no such record" (undefined) like any other answer', async () => {
    let loads = 0;
    const cache = new MetadataCache<string | undefined>({
      ttlMs: 5_000,
      load: () => {
        loads++;
        return Promise.resolve(undefined);
      },
    });
    expect(await cache.get('missing')).toBeUndefined();
    expect(await cache.get('missing')).toBeUndefined();
    expect(loads).toBe(1);
  });

  it('answers with the last copy while the store fails, and reads again once it is back', async () => {
    const clock = testClock();
    let failing = false;
    let version = 1;
    const cache = new MetadataCache<number>({
      ttlMs: 5_000,
      now: clock.now,
      load: () => (failing ? Promise.reject(new Error('store unreachable')) : Promise.resolve(version)),
    });
    expect(await cache.get('k')).toBe(1);
    failing = true;
    version = 2;
    clock.advance(60_000);
    expect(await cache.get('k')).toBe(1);
    expect(await cache.get('k', true)).toBe(1);
    // A key never read has no copy: the store's error reaches the caller.
    await expect(cache.get('never')).rejects.toThrow('store unreachable');
    failing = false;
    expect(await cache.get('k')).toBe(2);
  });

  it('keeps a copy set during a slower read; that read still answers its caller', async () => {
    const slow = deferred<number>();
    const cache = new MetadataCache<number>({ ttlMs: 5_000, load: () => slow.promise });
    const read = cache.get('k');
    cache.set('k', 7);
    slow.resolve(6);
    expect(await read).toBe(6);
    expect(cache.peek('k')).toBe(7);
    expect(await cache.get('k')).toBe(7);
  });
});

describe('MetadataCacheClock', () => {
  @Injectable()
  class Cached {
    readonly cache: MetadataCache<number>;
    loads = 0;
    constructor(@MetadataCacheClock() now?: () => number) {
      this.cache = new MetadataCache({ ttlMs: 5_000, load: () => Promise.resolve(++this.loads), now });
    }
  }

  it('gives a service the clock METADATA_CACHE_CLOCK provides', async () => {
    const clock = testClock();
    const module = await Test.createTestingModule({
      providers: [Cached, { provide: METADATA_CACHE_CLOCK, useValue: clock.now }],
    }).compile();
    const cached = module.get(Cached);
    expect(await cached.cache.get('k')).toBe(1);
    clock.advance(5_001);
    expect(await cached.cache.get('k')).toBe(2);
  });

  it('leaves the clock to lru-cache where none is provided', async () => {
    const module = await Test.createTestingModule({ providers: [Cached] }).compile();
    const cached = module.get(Cached);
    expect(await cached.cache.get('k')).toBe(1);
    expect(await cached.cache.get('k')).toBe(1);
  });
});
