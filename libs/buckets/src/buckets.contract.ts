import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import type { Buckets } from './buckets.port.js';

async function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * What every Buckets driver owes (local directories, S3): whole objects, sorted listings below a prefix,
 * keys that cannot leave their bucket, sizes and versions, a missing object failing as `ENOENT`.
 * `open` gives empty buckets for each test.
 */
export function bucketsContract(name: string, open: () => Promise<Buckets>): void {
  describe(`Buckets contract: ${name}`, () => {
    let buckets: Buckets;
    beforeEach(async () => {
      buckets = await open();
    });

    it('round-trips a string, a buffer and a stream', async () => {
      await buckets.write('incoming', 'a.txt', 'hello');
      await buckets.write('incoming', 'b.bin', Buffer.from([0, 1, 2, 255]));
      await buckets.write(
        'incoming',
        'c.csv',
        Readable.from([Buffer.from('id,name\n'), Buffer.from('1,ada\n')]),
      );
      expect(await text(buckets.read('incoming', 'a.txt'))).toBe('hello');
      const bin: Buffer[] = [];
      for await (const chunk of buckets.read('incoming', 'b.bin')) bin.push(chunk as Buffer);
      expect(Buffer.concat(bin)).toEqual(Buffer.from([0, 1, 2, 255]));
      expect(await text(buckets.read('incoming', 'c.csv'))).toBe('id,name\n1,ada\n');
    });

    it('writes a stream larger than one upload part whole', async () => {
      const part = Buffer.alloc(3 * 1024 * 1024, 'x');
      const source = new PassThrough();
      const writing = buckets.write('export', 't/big.csv', source);
      for (let i = 0; i < 4; i++) source.write(part);
      source.end('end');
      await writing;
      const read = await text(buckets.read('export', 't/big.csv'));
      expect(read.length).toBe(4 * part.length + 3);
      expect(read.endsWith('xend')).toBe(true);
      expect((await buckets.stat('export', 't/big.csv'))?.size).toBe(4 * part.length + 3);
    });

    it('lists nothing of an object while it is being written (S3: a multipart upload in progress)', async () => {
      const source = new PassThrough();
      const writing = buckets.write('incoming', 't/svc_events_big.csv', source);
      // More than one 8 MiB part, so S3 has an upload open with a part in it; the end is held back.
      source.write(Buffer.alloc(9 * 1024 * 1024, 'x'));
      await new Promise((r) => setTimeout(r, 300));
      expect(await buckets.listObjects('incoming', '')).toEqual([]);
      expect(await buckets.stat('incoming', 't/svc_events_big.csv')).toBeUndefined();
      source.end('end');
      await writing;
      expect((await buckets.listObjects('incoming', '')).map((o) => [o.key, o.size])).toEqual([
        ['t/svc_events_big.csv', 9 * 1024 * 1024 + 3],
      ]);
    });

    it('replaces an object whole, keeps buckets apart, writes an empty object', async () => {
      await buckets.write('scratch', 'k', 'a much longer first version');
      await buckets.write('scratch', 'k', 'short');
      await buckets.write('export', 'k', 'out');
      await buckets.write('scratch', 'empty', '');
      expect(await text(buckets.read('scratch', 'k'))).toBe('short');
      expect(await text(buckets.read('export', 'k'))).toBe('out');
      expect(await text(buckets.read('scratch', 'empty'))).toBe('');
      expect(await buckets.list('incoming', '')).toEqual([]);
    });

    it('fails reading a missing object with ENOENT', async () => {
      await expect(text(buckets.read('incoming', 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    });

    it('lists keys sorted, below a prefix with or without its slash', async () => {
      for (const key of ['t1/exports/e2/b.csv', 't1/exports/e1/a.csv', 't1/top.json', 't2/x.csv', 'z.txt']) {
        await buckets.write('export', key, key);
      }
      expect(await buckets.list('export', '')).toEqual([
        't1/exports/e1/a.csv',
        't1/exports/e2/b.csv',
        't1/top.json',
        't2/x.csv',
        'z.txt',
      ]);
      const below = ['t1/exports/e1/a.csv', 't1/exports/e2/b.csv', 't1/top.json'];
      expect(await buckets.list('export', 't1')).toEqual(below);
      expect(await buckets.list('export', 't1/')).toEqual(below);
      expect(await buckets.list('export', 'nobody/')).toEqual([]);
    });

    it('removes an object, and accepts removing one that is not there', async () => {
      await buckets.write('scratch', 'a/b', 'x');
      await buckets.write('scratch', 'a/c', 'y');
      await buckets.remove('scratch', 'a/b');
      await buckets.remove('scratch', 'never/written');
      expect(await buckets.list('scratch', '')).toEqual(['a/c']);
    });

    it('tells the size of an object and a new version when it is written again', async () => {
      expect(await buckets.stat('incoming', 'nothing')).toBeUndefined();
      await buckets.write('incoming', 't/f.csv', 'one');
      const first = (await buckets.stat('incoming', 't/f.csv'))!;
      expect(first.size).toBe(3);
      await new Promise((r) => setTimeout(r, 20));
      await buckets.write('incoming', 't/f.csv', 'two!');
      const second = (await buckets.stat('incoming', 't/f.csv'))!;
      expect(second.size).toBe(4);
      expect(second.version).not.toBe(first.version);
    });

    it('lists objects with the size and version stat tells, a new version when one is written again', async () => {
      await buckets.write('incoming', 't/a.csv', 'one');
      await buckets.write('incoming', 't/b.csv', 'three');
      await buckets.write('incoming', 'u/c.csv', 'x');
      const first = await buckets.listObjects('incoming', 't/');
      expect(first.map((o) => [o.key, o.size])).toEqual([
        ['t/a.csv', 3],
        ['t/b.csv', 5],
      ]);
      await new Promise((r) => setTimeout(r, 20));
      await buckets.write('incoming', 't/a.csv', 'four');
      const [again] = await buckets.listObjects('incoming', 't/');
      expect(again!.size).toBe(4);
      expect(again!.version).not.toBe(first[0]!.version);
      expect(again!.etag).toBe((await buckets.stat('incoming', 't/a.csv'))!.etag);
    });

    it('moves a finished local file in', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cdp-move-'));
      const file = join(dir, 'done.csv');
      writeFileSync(file, 'a,b\n1,2\n');
      await buckets.moveIn('export', 'trk/x/done.csv', file);
      expect(existsSync(file)).toBe(false);
      expect(await text(buckets.read('export', 'trk/x/done.csv'))).toBe('a,b\n1,2\n');
      rmSync(dir, { recursive: true, force: true });
    });

    it.each(['../escape.txt', 'a/../../escape.txt', '/tmp/escape.txt', '..', 'a//b', './a'])(
      'refuses the key %j everywhere',
      async (key) => {
        await expect(buckets.write('incoming', key, 'x')).rejects.toThrow(/not a valid object key/);
        expect(() => buckets.read('incoming', key)).toThrow(/not a valid object key/);
        await expect(buckets.remove('incoming', key)).rejects.toThrow(/not a valid object key/);
        await expect(buckets.stat('incoming', key)).rejects.toThrow(/not a valid object key/);
        await expect(buckets.list('incoming', key)).rejects.toThrow(/not a valid object key/);
        expect(await buckets.list('incoming', '')).toEqual([]);
      },
    );

    it('is ready while its buckets are there', async () => {
      expect(await buckets.health()).toMatchObject({ ready: true });
    });
  });
}
