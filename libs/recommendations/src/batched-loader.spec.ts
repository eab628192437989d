import { BatchedLoader } from './batched-loader.js';

describe('BatchedLoader', () => {
  it('reads the keys asked for while a read is under way together, each key once', async () => {
    const reads: string[][] = [];
    let release: () => void = () => undefined;
    const loader = new BatchedLoader<string>(
      async (keys) => {
        reads.push(keys);
        if (reads.length === 1) await new Promise<void>((r) => (release = r));
        return new Map(keys.filter((k) => k !== 'none').map((k) => [k, k.toUpperCase()]));
      },
      () => 'missing',
    );
    const first = loader.load('a');
    await new Promise((r) => setImmediate(r));
    const later = Promise.all([loader.load('b'), loader.load('c'), loader.load('b'), loader.load('none')]);
    release();
    expect(await first).toBe('A');
    expect(await later).toEqual(['B', 'C', 'B', 'missing']);
    expect(reads).toEqual([['a'], ['b', 'c', 'none']]);
  });

  it('fails the look-ups of a failed read, and reads again afterwards', async () => {
    let fail = true;
    const loader = new BatchedLoader<number>(
      (keys) =>
        fail
          ? Promise.reject(new Error('store down'))
          : Promise.resolve(new Map(keys.map((k) => [k, k.length]))),
      () => 0,
    );
    await expect(loader.load('x')).rejects.toThrow('store down');
    fail = false;
    expect(await loader.load('xyz')).toBe(3);
  });
});
