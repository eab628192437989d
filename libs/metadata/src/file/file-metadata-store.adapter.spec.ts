import { appendFileSync, mkdtempSync, readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metadataStoreContract } from '../metadata-store.contract.js';
import { FileMetadataStore } from './file-metadata-store.adapter.js';

metadataStoreContract('file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-meta-'));
  return { store: new FileMetadataStore(dir), reopen: () => new FileMetadataStore(dir) };
});

describe('file metadata store: an append-only log', () => {
  const fresh = () => mkdtempSync(join(tmpdir(), 'cdp-meta-log-'));

  /** Bytes written by `n` writes of new records to a bucket already holding `history` of them. */
  async function bytesPerWrite(history: number, n = 50): Promise<number> {
    const store = new FileMetadataStore(fresh());
    for (let i = 0; i < history; i++) await store.create('jobs', `old-${i}`, { state: 'completed', i });
    const before = store.bytesWritten;
    for (let i = 0; i < n; i++) await store.create('jobs', `new-${i}`, { state: 'completed', i });
    const per = (store.bytesWritten - before) / n;
    await store.close();
    return per;
  }

  it('writes one line per change, whatever the history: the same bytes after 20 records as after 3,000', async () => {
    const small = await bytesPerWrite(20);
    const large = await bytesPerWrite(3_000);
    expect(small).toBeLessThan(80);
    // Keys and values of the same width: a rewrite of the history would be 150 times larger.
    expect(large).toBeLessThanOrEqual(small + 4);
  });

  it('compacts past a size: updates of one record keep the log small and the amortised write cost flat', async () => {
    const dir = fresh();
    const store = new FileMetadataStore(dir, { compactAtBytes: 16 * 1024 });
    await store.create('jobs', 'j', { heartbeat: 0 });
    const writes = 2_000;
    for (let i = 1; i <= writes; i++) await store.update('jobs', 'j', { heartbeat: 1e12 + i }, i);
    const line = `{"k":"j","r":2000,"v":{"heartbeat":1000000002000}}\n`.length;
    // Each update appended its line; the compactions (a one-line log each) add at most as much again.
    expect(store.bytesWritten / writes).toBeLessThan(line * 2);
    expect(statSync(join(dir, 'jobs.log')).size).toBeLessThanOrEqual(16 * 1024 + line);
    await store.close();
    const again = new FileMetadataStore(dir);
    expect(await again.get('jobs', 'j')).toEqual({
      key: 'j',
      value: { heartbeat: 1e12 + writes },
      revision: writes + 1,
    });
    await again.close();
  });

  it('ignores a torn last line (a crash mid-append) and appends after it', async () => {
    const dir = fresh();
    const store = new FileMetadataStore(dir);
    await store.create('lists', 'a', { n: 1 });
    await store.update('lists', 'a', { n: 2 }, 1);
    await store.close();
    appendFileSync(join(dir, 'lists.log'), '{"k":"a","r":3,"v":{"n":');
    const reopened = new FileMetadataStore(dir);
    expect(await reopened.get('lists', 'a')).toEqual({ key: 'a', value: { n: 2 }, revision: 2 });
    await reopened.create('lists', 'b', { n: 9 });
    await reopened.close();
    const third = new FileMetadataStore(dir);
    expect((await third.list('lists')).map((e) => [e.key, e.value])).toEqual([
      ['a', { n: 2 }],
      ['b', { n: 9 }],
    ]);
    await third.close();
  });

  it('reads a bucket of the earlier whole-file format once and keeps it as a log', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'accounts.json'), JSON.stringify([['a1', { value: { id: 'a1' }, revision: 4 }]]));
    const store = new FileMetadataStore(dir);
    expect(existsSync(join(dir, 'accounts.json'))).toBe(false);
    expect(readFileSync(join(dir, 'accounts.log'), 'utf8')).toBe('{"k":"a1","r":4,"v":{"id":"a1"}}\n');
    expect(await store.update('accounts', 'a1', { id: 'a1', n: 1 }, 4)).toBe(5);
    await store.close();
    const again = new FileMetadataStore(dir);
    expect(await again.get('accounts', 'a1')).toMatchObject({ revision: 5 });
    await again.close();
  });
});
