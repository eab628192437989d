import { IdempotencyRecords, type Claim } from './idempotency-records.js';
import type { IdempotencyStore } from './idempotency-store.port.js';

/** Account names unique to this run, since a shared Redis outlives it. */
const run = Math.random().toString(36).slice(2, 8);

/** A store and the clock it reads (Redis expires on its own clock; the rules read `clock`). */
export interface OpenedStore {
  store: IdempotencyStore;
  clock: { now: number };
}

/** What every IdempotencyStore driver owes, and the header's rules on top of it. */
export function idempotencyStoreContract(name: string, open: () => Promise<OpenedStore>): void {
  describe(`IdempotencyStore contract: ${name}`, () => {
    it('sets only over the expected value, deletes, and keeps accounts apart', async () => {
      const { store, clock } = await open();
      const a = `a${run}`;
      const b = `b${run}`;
      const until = clock.now + 60_000;
      expect(await store.get(a, 'k')).toBeUndefined();
      expect(await store.compareAndSet(a, 'k', undefined, '{"n":1}', until)).toBe(true);
      expect(await store.compareAndSet(a, 'k', undefined, '{"n":2}', until)).toBe(false);
      expect(await store.compareAndSet(a, 'k', '{"n":0}', '{"n":2}', until)).toBe(false);
      expect(await store.get(a, 'k')).toBe('{"n":1}');
      expect(await store.get(b, 'k')).toBeUndefined();
      expect(await store.compareAndSet(b, 'k', undefined, '{"n":9}', until)).toBe(true);
      expect(await store.compareAndSet(a, 'k', '{"n":1}', '{"n":2}', until)).toBe(true);
      expect(await store.get(a, 'k')).toBe('{"n":2}');
      expect(await store.get(b, 'k')).toBe('{"n":9}');
      expect(await store.compareAndSet(a, 'k', '{"n":2}', undefined, until)).toBe(true);
      expect(await store.get(a, 'k')).toBeUndefined();
      await store.close();
    });

    it('forgets a record once its expiry passed (the window of CDP_IDEMPOTENCY_TTL_SECONDS)', async () => {
      const { store, clock } = await open();
      const a = `x${run}`;
      expect(await store.compareAndSet(a, 'k', undefined, '{"n":1}', clock.now + 200)).toBe(true);
      expect(await store.get(a, 'k')).toBe('{"n":1}');
      clock.now += 201;
      // The file driver reads the test's clock; Redis expires the key on its own clock (PX 200).
      const deadline = Date.now() + 5_000;
      while ((await store.get(a, 'k')) !== undefined && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(await store.get(a, 'k')).toBeUndefined();
      // Gone means free: a new request may take the key.
      expect(await store.compareAndSet(a, 'k', undefined, '{"n":2}', clock.now + 60_000)).toBe(true);
      await store.close();
    });

    it('takes keys of any printable characters, up to 255', async () => {
      const { store, clock } = await open();
      const key = ` ~!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}`.repeat(8).slice(0, 255);
      expect(await store.compareAndSet(`c${run}`, key, undefined, '{}', clock.now + 60_000)).toBe(true);
      expect(await store.get(`c${run}`, key)).toBe('{}');
      expect(await store.get(`c${run}`, key.slice(1))).toBeUndefined();
      await store.close();
    });

    it('lets only one of many simultaneous requests hold a key', async () => {
      const { store, clock } = await open();
      const records = new IdempotencyRecords(store, { ttlMs: 60_000, leaseMs: 30_000 }, () => clock.now);
      const begins = await Promise.all(
        Array.from({ length: 8 }, (_, i) => records.begin(`d${run}`, 'same', 'h1', `owner${i}`)),
      );
      expect(begins.filter((b) => b.kind === 'proceed')).toHaveLength(1);
      expect(begins.filter((b) => b.kind === 'in-flight')).toHaveLength(7);
      await store.close();
    });

    it('replays a durable answer to the same request, refuses another, frees a key after a 4xx', async () => {
      const { store, clock } = await open();
      const records = new IdempotencyRecords(store, { ttlMs: 60_000, leaseMs: 30_000 }, () => clock.now);
      const account = `e${run}`;
      const first = await records.begin(account, 'k1', 'h1', 'o1');
      expect(first).toMatchObject({ kind: 'proceed', resend: false });
      expect(await records.begin(account, 'k1', 'h1', 'o2')).toEqual({
        kind: 'in-flight',
        retryAfterSeconds: 30,
      });
      const answer = { status: 202, body: { title: 'Accepted' }, requestId: 'r1' };
      expect(await records.finish((first as { claim: Claim }).claim, answer)).toBe(true);
      expect(await records.begin(account, 'k1', 'h1', 'o3')).toEqual({ kind: 'replay', answer });
      expect(await records.begin(account, 'k1', 'h2', 'o4')).toEqual({ kind: 'mismatch' });
      expect(await records.begin(`other${account}`, 'k1', 'h2', 'o5')).toMatchObject({ kind: 'proceed' });

      const invalid = await records.begin(account, 'k2', 'bad', 'o6');
      await records.abandon((invalid as { claim: Claim }).claim, false);
      expect(await store.get(account, 'k2')).toBeUndefined();
      expect(await records.begin(account, 'k2', 'fixed', 'o7')).toMatchObject({
        kind: 'proceed',
        resend: false,
      });
      await store.close();
    });

    it('hands a key on after a failed publish or a dead holder, marking a resend of the same body', async () => {
      const { store, clock } = await open();
      const records = new IdempotencyRecords(store, { ttlMs: 60_000, leaseMs: 30_000 }, () => clock.now);
      const account = `f${run}`;
      const failed = await records.begin(account, 'k', 'h1', 'o1');
      await records.abandon((failed as { claim: Claim }).claim, true);
      const retry = await records.begin(account, 'k', 'h1', 'o2');
      expect(retry).toMatchObject({ kind: 'proceed', resend: true });

      // o2 dies holding the key; after its lease another attempt takes over, and o2's late answer loses.
      clock.now += 30_001;
      const takeover = await records.begin(account, 'k', 'h1', 'o3');
      expect(takeover).toMatchObject({ kind: 'proceed', resend: true });
      const answer = { status: 202, body: {}, requestId: 'r' };
      expect(await records.finish((retry as { claim: Claim }).claim, answer)).toBe(false);
      expect(await records.finish((takeover as { claim: Claim }).claim, answer)).toBe(true);
      expect(await records.begin(account, 'k', 'h1', 'o4')).toEqual({ kind: 'replay', answer });
      await store.close();
    });
  });
}
