import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '@cdp/contracts';
import { FileMetadataStore } from '@cdp/metadata/file';
import { ListsService } from './lists.service.js';

async function invalid(promise: Promise<unknown>): Promise<{ status: number; detail: unknown }> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return { status: (err as ApiError).status, detail: (err as ApiError).detail };
}

describe('ListsService', () => {
  let lists: ListsService;
  beforeEach(() => {
    lists = new ListsService(new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-lists-'))));
  });

  it('derives the id from the name and lists svc_all first', async () => {
    expect(await lists.create('a', 'Weekly News')).toEqual({
      list_id: 'weekly_news',
      name: 'Weekly News',
      created_at: expect.any(String),
    });
    const all = await lists.all('a', '2026-01-01T00:00:00.000Z');
    expect(all.map((l) => l.list_id)).toEqual(['svc_all', 'weekly_news']);
    expect(all[0]).toEqual({ list_id: 'svc_all', name: 'svc_all', created_at: '2026-01-01T00:00:00.000Z' });
    expect(await lists.all('b', 'x')).toHaveLength(1); // accounts apart
  });

  it('refuses a used name, ignoring case and blanks, and svc_all', async () => {
    await lists.create('a', 'News');
    for (const name of ['News', ' news ', 'NEWS', 'svc_all', 'SVC_ALL']) {
      expect(await invalid(lists.create('a', name))).toEqual({
        status: 400,
        detail: { invalids: [{ field: 'name', reason: 'list name must be unique' }] },
      });
    }
  });

  it('refuses names that are not strings, blank, too long, or without a letter or digit', async () => {
    for (const name of [undefined, 42, '', '   ', 'x'.repeat(1025), '!!!']) {
      const { status, detail } = await invalid(lists.create('a', name));
      expect(status).toBe(400);
      expect(detail).toEqual({ invalids: [{ field: 'name', reason: expect.any(String) }] });
    }
    expect((await lists.create('a', 'x'.repeat(1024))).name).toHaveLength(1024);
  });

  it('renames keeping the id; the old name is free again, a used one is not', async () => {
    await lists.create('a', 'News');
    await lists.create('a', 'Promo');
    expect(await lists.rename('a', 'news', 'Weekly')).toMatchObject({ list_id: 'news', name: 'Weekly' });
    expect(await invalid(lists.rename('a', 'news', 'promo'))).toMatchObject({ status: 400 });
    expect(await lists.rename('a', 'news', 'WEEKLY')).toMatchObject({ list_id: 'news', name: 'WEEKLY' });
    // "News" is free again; its derived id belongs to the renamed list, so it gets the next one.
    expect(await lists.create('a', 'News')).toMatchObject({ list_id: 'news_2', name: 'News' });
    expect(await lists.create('a', 'promo!')).toMatchObject({ list_id: 'promo_' });
    expect(await invalid(lists.rename('a', 'nope', 'X'))).toEqual({
      status: 404,
      detail: { message: 'list not found' },
    });
    expect(await invalid(lists.rename('a', 'svc_all', 'X'))).toMatchObject({ status: 400 });
  });

  it('of concurrent creations of one name, exactly one wins', async () => {
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => lists.create('a', 'Race')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((await lists.all('a', 'x')).map((l) => l.list_id)).toEqual(['svc_all', 'race']);
  });

  it('tells which ids name no list', async () => {
    await lists.create('a', 'News');
    expect(await lists.unknown('a', ['news', 'svc_all', 'gone', 'gone'])).toEqual(['gone']);
  });
});
