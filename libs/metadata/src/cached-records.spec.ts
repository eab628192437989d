import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CachedRecords } from './cached-records.js';
import { FileMetadataStore } from './file/index.js';
import { OutageMetadataStore } from './testing/outage-metadata-store.js';

interface Doc {
  names: string[];
}

describe('CachedRecords', () => {
  let store: FileMetadataStore;
  let shared: OutageMetadataStore;
  let t: number;
  let replica: CachedRecords<Doc, string[]>;
  let other: CachedRecords<Doc, string[]>;
  const options = { ttlMs: 2_000, view: (found: { value: Doc } | undefined) => found?.value.names ?? [] };
  const add =
    (name: string) =>
    (found: { value: Doc } | undefined): Doc => ({ names: [...(found?.value.names ?? []), name] });

  beforeEach(() => {
    store = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-cached-records-')));
    shared = new OutageMetadataStore(store);
    t = 1_000_000;
    replica = new CachedRecords(shared, 'things', { ...options, now: () => t });
    other = new CachedRecords(store, 'things', options);
  });
  afterEach(() => store.close());

  it('gives the view of a missing record, and reads the store once within the ttl', async () => {
    expect(await replica.cached('acc')).toEqual([]);
    expect(await replica.cached('acc')).toEqual([]);
    expect(shared.gets).toBe(1);
  });

  it("sees another replica's change after the ttl, `fresh` and `read` at once", async () => {
    expect(await replica.cached('acc')).toEqual([]);
    await other.update('acc', add('a'));
    t += 2_000;
    expect(await replica.cached('acc')).toEqual([]);
    expect(await replica.read('acc')).toEqual(['a']);
    expect(await replica.cached('acc', true)).toEqual(['a']);
    await other.update('acc', add('b'));
    t += 2_001;
    expect(await replica.cached('acc')).toEqual(['a', 'b']);
  });

  it('keeps what it wrote as its copy at once, on top of what another replica wrote', async () => {
    expect(await replica.cached('acc')).toEqual([]);
    await other.update('acc', add('a'));
    expect(await replica.update('acc', add('b'))).toEqual(['a', 'b']);
    const gets = shared.gets;
    expect(await replica.cached('acc')).toEqual(['a', 'b']);
    expect(replica.peek('acc')).toEqual(['a', 'b']);
    expect(shared.gets).toBe(gets);
  });

  it('answers with its last copy while the store is unreachable', async () => {
    await other.update('acc', add('a'));
    expect(await replica.cached('acc')).toEqual(['a']);
    shared.reachable = false;
    t += 60_000;
    expect(await replica.cached('acc')).toEqual(['a']);
    await expect(replica.cached('never')).rejects.toThrow('unreachable');
  });
});
