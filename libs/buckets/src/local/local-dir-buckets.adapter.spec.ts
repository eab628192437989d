import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { checkKey } from '../buckets.port.js';
import { bucketsContract } from '../buckets.contract.js';
import { LocalDirBuckets } from './local-dir-buckets.adapter.js';
import { eventually } from '../../../../test/support/eventually.js';

let root: string;
let dirs: { incoming: string; scratch: string; export: string };
let buckets: LocalDirBuckets;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'cdp-buckets-'));
  dirs = { incoming: join(root, 'in'), scratch: join(root, 'scratch'), export: join(root, 'out') };
  buckets = new LocalDirBuckets(dirs);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

bucketsContract('local directories', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-buckets-contract-'));
  return Promise.resolve(
    new LocalDirBuckets({
      incoming: join(dir, 'in'),
      scratch: join(dir, 'scratch'),
      export: join(dir, 'out'),
    }),
  );
});

async function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

/** Every file under the temporary root, relative to it. */
function filesUnderRoot(): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(root.length + 1))
    .sort();
}

describe('checkKey', () => {
  it('splits a relative key into its segments', () => {
    expect(checkKey('a')).toEqual(['a']);
    expect(checkKey('acct/data-exports/e1/complete.json')).toEqual([
      'acct',
      'data-exports',
      'e1',
      'complete.json',
    ]);
    expect(checkKey('...')).toEqual(['...']);
    expect(checkKey('..a/b..')).toEqual(['..a', 'b..']);
  });

  it.each([
    '',
    '/',
    '/etc/passwd',
    '..',
    '.',
    '../x',
    'a/../../x',
    'a/./b',
    'a//b',
    'a/',
    'a/..',
    'a\0b',
    '//x',
  ])('refuses %j', (key) => {
    expect(() => checkKey(key)).toThrow(/not a valid object key/);
  });
});

describe('LocalDirBuckets', () => {
  it('creates the bucket directories', () => {
    for (const d of Object.values(dirs)) expect(existsSync(d)).toBe(true);
  });

  describe('write and read', () => {
    // Round trips of strings, buffers and streams: bucketsContract, run on this driver above.
    it('creates the directories of a nested key', async () => {
      await buckets.write('export', 'acct/data-exports/e1/part-0.csv', 'x');
      expect(existsSync(join(dirs.export, 'acct', 'data-exports', 'e1', 'part-0.csv'))).toBe(true);
      expect(await text(buckets.read('export', 'acct/data-exports/e1/part-0.csv'))).toBe('x');
    });

    it('replaces an existing object whole', async () => {
      await buckets.write('scratch', 'k', 'a much longer first version');
      await buckets.write('scratch', 'k', 'short');
      expect(await text(buckets.read('scratch', 'k'))).toBe('short');
    });

    it('writes an empty object', async () => {
      await buckets.write('scratch', 'empty', '');
      expect(await text(buckets.read('scratch', 'empty'))).toBe('');
      expect(await buckets.list('scratch', '')).toEqual(['empty']);
    });

    it('keeps buckets apart', async () => {
      await buckets.write('incoming', 'k', 'in');
      await buckets.write('export', 'k', 'out');
      expect(await text(buckets.read('incoming', 'k'))).toBe('in');
      expect(await text(buckets.read('export', 'k'))).toBe('out');
      expect(await buckets.list('scratch', '')).toEqual([]);
    });

    it('fails reading a missing object', async () => {
      const err = await failure(text(buckets.read('incoming', 'missing')));
      expect((err as NodeJS.ErrnoException).code).toBe('ENOENT');
    });

    it('leaves no partial file behind', async () => {
      await buckets.write('incoming', 'a/b.txt', 'x');
      expect(readdirSync(join(dirs.incoming, 'a'))).toEqual(['b.txt']);
    });

    it('shows nothing of an object while its stream is still being written', async () => {
      const source = new PassThrough();
      const writing = buckets.write('incoming', 'up/file.csv', source);
      source.write('first half,');
      // wait until the partial file exists
      const up = join(dirs.incoming, 'up');
      for (let i = 0; i < 200 && !(existsSync(up) && readdirSync(up).length); i++) {
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(readdirSync(up)).toEqual([expect.stringMatching(/^file\.csv\.partial-/)]);
      expect(await buckets.list('incoming', '')).toEqual([]);
      expect(await buckets.list('incoming', 'up')).toEqual([]);
      await expect(text(buckets.read('incoming', 'up/file.csv'))).rejects.toMatchObject({ code: 'ENOENT' });
      source.end('second half');
      await writing;
      expect(await buckets.list('incoming', 'up')).toEqual(['up/file.csv']);
      expect(await text(buckets.read('incoming', 'up/file.csv'))).toBe('first half,second half');
    });

    it('keeps the previous version readable while a new one is written', async () => {
      await buckets.write('scratch', 'k', 'old');
      const source = new PassThrough();
      const writing = buckets.write('scratch', 'k', source);
      source.write('new, part 1;');
      // The first part is on disk (in the write's temporary file) before the key is read again.
      await eventually(() => {
        const partial = readdirSync(dirs.scratch).find((name) => name.startsWith('k.partial-'));
        return partial !== undefined && readFileSync(join(dirs.scratch, partial), 'utf8') === 'new, part 1;';
      });
      expect(await text(buckets.read('scratch', 'k'))).toBe('old');
      source.end('part 2');
      await writing;
      expect(await text(buckets.read('scratch', 'k'))).toBe('new, part 1;part 2');
    });

    // Regression: the temporary name is per process (`.partial-<pid>`), not
    // per write, so two writes of one key at once share it: one write fails with ENOENT at the rename and
    // the object can end up a mix of both payloads, which the port promises never to show.
    it('leaves one whole version when the same key is written twice at once', async () => {
      const a = 'a'.repeat(4 << 20);
      const b = 'b'.repeat(1 << 20);
      const results = await Promise.allSettled([
        buckets.write('scratch', 'same', a),
        buckets.write('scratch', 'same', b),
      ]);
      const stored = await text(buckets.read('scratch', 'same'));
      expect(stored === a || stored === b).toBe(true);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    });
  });

  describe('list', () => {
    beforeEach(async () => {
      for (const key of ['t1/exports/e2/b.csv', 't1/exports/e1/a.csv', 't1/top.json', 't2/x.csv', 'z.txt']) {
        await buckets.write('export', key, key);
      }
    });

    // Every key, sorted, and below a prefix with or without its slash: bucketsContract. Here, deeper prefixes.
    it('lists the keys below a prefix, with or without a trailing slash', async () => {
      const below = ['t1/exports/e1/a.csv', 't1/exports/e2/b.csv', 't1/top.json'];
      expect(await buckets.list('export', 't1')).toEqual(below);
      expect(await buckets.list('export', 't1/')).toEqual(below);
      expect(await buckets.list('export', 't1/exports/e1/')).toEqual(['t1/exports/e1/a.csv']);
    });

    it('lists nothing below a prefix that does not exist', async () => {
      expect(await buckets.list('export', 'nobody/')).toEqual([]);
      expect(await buckets.list('incoming', '')).toEqual([]);
    });

    it('does not list directories, only objects', async () => {
      mkdirSync(join(dirs.export, 'emptydir'));
      expect(await buckets.list('export', '')).not.toContain('emptydir');
    });

    it('does not list partial files', async () => {
      writeFileSync(join(dirs.export, 't2', 'y.csv.partial-12345'), 'half');
      writeFileSync(join(dirs.export, `z.txt.partial-${process.pid}`), 'half');
      expect(await buckets.list('export', 't2')).toEqual(['t2/x.csv']);
      expect(await buckets.list('export', '')).not.toEqual(
        expect.arrayContaining([expect.stringContaining('.partial-')]),
      );
    });
  });

  describe('remove', () => {
    it('removes an object', async () => {
      await buckets.write('scratch', 'a/b', 'x');
      await buckets.write('scratch', 'a/c', 'y');
      await buckets.remove('scratch', 'a/b');
      expect(await buckets.list('scratch', '')).toEqual(['a/c']);
      await expect(text(buckets.read('scratch', 'a/b'))).rejects.toMatchObject({ code: 'ENOENT' });
    });

    it('accepts removing an object that is not there', async () => {
      await expect(buckets.remove('scratch', 'never/written')).resolves.toBeUndefined();
    });
  });

  describe('path traversal', () => {
    const bad = ['../escape.txt', 'a/../../escape.txt', '/tmp/escape.txt', '..', 'a//b', './a'];

    it.each(bad)('refuses to write %j', async (key) => {
      const err = await failure(buckets.write('incoming', key, 'x'));
      expect(err.message).toMatch(/not a valid object key/);
      expect(filesUnderRoot()).toEqual([]);
    });

    it.each(bad)('refuses to read %j', (key) => {
      expect(() => buckets.read('incoming', key)).toThrow(/not a valid object key/);
    });

    it('refuses to read a file of another bucket through ..', async () => {
      await buckets.write('export', 'secret.csv', 'x');
      expect(() => buckets.read('incoming', '../out/secret.csv')).toThrow(/not a valid object key/);
    });

    it.each(bad)('refuses to remove %j', async (key) => {
      await buckets.write('scratch', 'keep', 'x');
      const err = await failure(buckets.remove('scratch', key));
      expect(err.message).toMatch(/not a valid object key/);
      expect(await buckets.list('scratch', '')).toEqual(['keep']);
    });

    it.each(['..', '../', '../out', '/etc', 'a/../..'])('refuses to list below %j', async (prefix) => {
      await buckets.write('export', 'secret.csv', 'x');
      const err = await failure(buckets.list('incoming', prefix));
      expect(err.message).toMatch(/not a valid object key/);
    });
  });

  describe('health', () => {
    it('is ready while the directories exist', async () => {
      expect(await buckets.health()).toEqual({ driver: 'local directories', ready: true });
    });

    it('is not ready when a directory is gone', async () => {
      rmSync(dirs.scratch, { recursive: true });
      const health = await buckets.health();
      expect(health.ready).toBe(false);
      expect(health.detail).toEqual(expect.any(String));
    });
  });
});

describe('moveIn', () => {
  it('moves a finished local file into the bucket, overwriting an older object of that key', async () => {
    const file = join(root, 'done.csv');
    writeFileSync(file, 'a,b\n1,2\n');
    await buckets.write('export', 'trk/data-exports/x/done.csv', 'old');
    await buckets.moveIn('export', 'trk/data-exports/x/done.csv', file);
    expect(existsSync(file)).toBe(false);
    expect(await text(buckets.read('export', 'trk/data-exports/x/done.csv'))).toBe('a,b\n1,2\n');
    expect(await buckets.list('export', 'trk')).toEqual(['trk/data-exports/x/done.csv']);
  });

  it('refuses a key outside the bucket', async () => {
    const file = join(root, 'x');
    writeFileSync(file, 'x');
    expect((await failure(buckets.moveIn('export', '../escape', file))).message).toMatch(
      /not a valid object key/,
    );
    expect(existsSync(file)).toBe(true);
  });
});
