import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdempotencyRecords, type Claim } from '../idempotency-records.js';
import { idempotencyStoreContract } from '../idempotency-store.contract.js';
import { FileIdempotencyStore } from './file-idempotency-store.adapter.js';

const dirs: string[] = [];
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-idem-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

idempotencyStoreContract('file', () => {
  const clock = { now: 1_800_000_000_000 };
  return Promise.resolve({ store: new FileIdempotencyStore(freshDir(), () => clock.now), clock });
});

describe('FileIdempotencyStore', () => {
  it('keeps records across a restart, and forgets them at their expiry', async () => {
    const dir = freshDir();
    let now = 1_800_000_000_000;
    const first = new FileIdempotencyStore(dir, () => now);
    const records = new IdempotencyRecords(first, { ttlMs: 86_400_000, leaseMs: 30_000 }, () => now);
    const begin = await records.begin('acct', 'key', 'h', 'o');
    const answer = { status: 202, body: { title: 'Accepted' }, requestId: 'r1' };
    await records.finish((begin as { claim: Claim }).claim, answer);
    await first.close();

    const second = new FileIdempotencyStore(dir, () => now);
    const again = new IdempotencyRecords(second, { ttlMs: 86_400_000, leaseMs: 30_000 }, () => now);
    expect(await again.begin('acct', 'key', 'h', 'o2')).toEqual({ kind: 'replay', answer });
    now += 86_400_000;
    expect(await second.get('acct', 'key')).toBeUndefined();
    await second.close();
    // Rewritten when opened (at the first request with a key) without the expired record.
    const third = new FileIdempotencyStore(dir, () => now);
    expect(await third.get('acct', 'key')).toBeUndefined();
    expect(readFileSync(join(dir, 'idempotency.log'), 'utf8')).toBe('');
    await third.close();
  });

  it('rewrites its log so that expired and replaced records do not pile up', async () => {
    const dir = freshDir();
    let now = 1_800_000_000_000;
    const store = new FileIdempotencyStore(dir, () => now);
    for (let i = 0; i < 3000; i++) {
      await store.compareAndSet('acct', `k${i}`, undefined, '{"v":1}', now + 1000);
      now += 1; // every record lives a second: by the end, the first two thousand are gone
    }
    await store.compareAndSet('acct', 'last', undefined, '{"v":1}', now + 1000);
    const lines = readFileSync(join(dir, 'idempotency.log'), 'utf8').split('\n').filter(Boolean);
    expect(lines.length).toBeLessThan(2100);
    expect(await store.get('acct', 'k2999')).toBe('{"v":1}');
    expect(await store.get('acct', 'k0')).toBeUndefined();
    await store.close();
  });

  it('touches nothing on disk in a process that never gets a key', async () => {
    const dir = join(freshDir(), 'idempotency');
    await new FileIdempotencyStore(dir).close();
    expect(existsSync(dir)).toBe(false);
  });

  it('ignores the torn last line of a crash', async () => {
    const dir = freshDir();
    const now = 1_800_000_000_000;
    const store = new FileIdempotencyStore(dir, () => now);
    await store.compareAndSet('acct', 'kept', undefined, '{"v":1}', now + 1000);
    await store.close();
    const { appendFileSync } = await import('node:fs');
    appendFileSync(join(dir, 'idempotency.log'), '{"k":"acct\\u0000torn","v":"{');
    const reopened = new FileIdempotencyStore(dir, () => now);
    expect(await reopened.get('acct', 'kept')).toBe('{"v":1}');
    expect(await reopened.get('acct', 'torn')).toBeUndefined();
    await reopened.compareAndSet('acct', 'after', undefined, '{"v":2}', now + 1000);
    await reopened.close();
    const last = new FileIdempotencyStore(dir, () => now);
    expect(await last.get('acct', 'after')).toBe('{"v":2}');
    await last.close();
  });
});
