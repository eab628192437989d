import { configureFaults, parseFaults } from '@cdp/faults';
import { ADMIN_TOKEN, EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { postWithKey } from './support/api-calls.js';

/**
 * Poison does not slow anyone else down: one account's messages fail deterministically in the processor
 * (a `reject` fault scoped to that account: what a value the store cannot parse does), and they go to
 * the dead letters at once instead of being retried, while another account's writes become readable as
 * fast as when all was quiet. The operator sees them (`/health`, the admin API) and replays them once
 * the cause is gone.
 */
describe.each(WIRINGS)('dead letters (%s)', (_wiring, start) => {
  let p: Platform;
  let quiet: TestAccount;
  let poisoned: TestAccount;
  const POISON_REQUESTS = 30;

  beforeAll(async () => {
    ({ p, acc: quiet } = await startWithAccount(start, 'quiet'));
    poisoned = await p.createAccount('poisoned');
    await arm(`processor.message[${poisoned.id}]:reject~3600000`);
  });

  afterAll(async () => {
    configureFaults([]);
    await p?.close();
  });

  /** Arms (or with no rule disarms) the fault where the processor runs. */
  async function arm(rule?: string): Promise<void> {
    if (p instanceof EmbeddedPlatform) {
      configureFaults(parseFaults(rule));
      return;
    }
    await p.stopProcessor();
    await p.startProcessor(rule ? { CDP_TEST_FAULTS: rule } : {});
  }

  const admin = (path: string, method: 'get' | 'post' = 'get') =>
    p.http()[method](path).set('authorization', `Bearer ${ADMIN_TOKEN}`);

  let sample = 0;
  /** Milliseconds from the 202 of a profile write until `GET /v3/profiles` returns the value. */
  async function writeToRead(account: TestAccount): Promise<number> {
    const id = `lat-${sample++}`;
    const res = await postWithKey(p, account.publicKey, '/v3/profiles', {
      attributes: { customer_id: id, first_name: `n${id}` },
    });
    expect(res.status).toBe(202);
    const accepted = Date.now();
    await eventually(
      async () => {
        const r = await p.http().get(`/v3/profiles?customer_id=${id}`).set('x-api-key', account.privateKey);
        return r.status === 200 && r.body.attributes?.first_name === `n${id}`;
      },
      30_000,
      10,
    );
    return Date.now() - accepted;
  }

  async function medianOf(samples: number, account: TestAccount): Promise<number> {
    const times: number[] = [];
    for (let i = 0; i < samples; i++) times.push(await writeToRead(account));
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)]!;
  }

  it("dead-letters one account's poison at once while another account's writes stay as fast", async () => {
    const quietMs = await medianOf(15, quiet);

    // 30 poison requests in 15 s from one account, while the other one keeps writing and reading.
    let sending = true;
    const poison = (async () => {
      for (let i = 0; i < POISON_REQUESTS; i++) {
        const res = await postWithKey(p, poisoned.publicKey, '/v3/profiles', {
          attributes: { customer_id: `poison-${i}`, first_name: 'P' },
        });
        expect(res.status).toBe(202);
        await new Promise((r) => setTimeout(r, 500));
      }
      sending = false;
    })();
    const times: number[] = [];
    while (sending) times.push(await writeToRead(quiet));
    await poison;
    times.sort((a, b) => a - b);
    const poisonedMs = times[Math.floor(times.length / 2)]!;
    process.stdout.write(
      `[dead letters, ${_wiring}] write-to-read median: quiet ${quietMs} ms, beside poison ${poisonedMs} ms (${times.length} samples)\n`,
    );
    // Twice the quiet figure; below 200 ms, polling and scheduling noise dominate, so that is the floor.
    expect(poisonedMs).toBeLessThanOrEqual(2 * Math.max(quietMs, 200));

    // Every poison message is a dead letter, listed for its account and counted in /health.
    const listed = await eventually(async () => {
      const res = await admin(`/admin/v1/dead-letters?account=${poisoned.id}&limit=1000`);
      expect(res.status).toBe(200);
      expect(res.body.dead_letters).toHaveLength(POISON_REQUESTS);
      return res.body.dead_letters as Record<string, unknown>[];
    }, 60_000);
    for (const d of listed) {
      expect(d).toMatchObject({ account: poisoned.id, kind: 'profiles', records: 1, deliveries: 1 });
      expect(String(d.reason)).toContain('RejectedFault');
      expect(Number.isNaN(Date.parse(String(d.first_failed_at)))).toBe(false);
    }
    const quietDead = await admin(`/admin/v1/dead-letters?account=${quiet.id}`);
    expect(quietDead.body.dead_letters).toEqual([]);
    const health = await p.http().get('/health');
    expect(health.body.dead_letters).toEqual({ count: POISON_REQUESTS });
    // Paging: one at a time, in order, with a cursor.
    const first = await admin(`/admin/v1/dead-letters?account=${poisoned.id}&limit=1`);
    expect(first.body.dead_letters).toHaveLength(1);
    const second = await admin(
      `/admin/v1/dead-letters?account=${poisoned.id}&limit=1&after=${first.body.next as string}`,
    );
    expect(second.body.dead_letters[0].id).toBe(listed[1]!.id);
  });

  it('replays one dead letter, then all of an account, once the cause is gone', async () => {
    await arm(); // the cause is fixed
    const page = await admin(`/admin/v1/dead-letters?account=${poisoned.id}&limit=1`);
    const one = page.body.dead_letters[0] as { id: string };
    const replayed = await admin(`/admin/v1/dead-letters/${one.id}/replay`, 'post');
    expect(replayed.status).toBe(200);
    expect(replayed.body).toEqual({ replayed: 1 });
    expect((await admin(`/admin/v1/dead-letters/${one.id}/replay`, 'post')).status).toBe(404);

    const all = await admin(`/admin/v1/dead-letters/replay?account=${poisoned.id}`, 'post');
    expect(all.status).toBe(200);
    expect(all.body).toEqual({ replayed: POISON_REQUESTS - 1 });
    expect((await admin('/admin/v1/dead-letters/replay', 'post')).status).toBe(400);

    // Every poison profile is stored now, and nothing is dead any more.
    await eventually(async () => {
      for (let i = 0; i < POISON_REQUESTS; i++) {
        const r = await p
          .http()
          .get(`/v3/profiles?customer_id=poison-${i}`)
          .set('x-api-key', poisoned.privateKey);
        if (r.status !== 200) return false;
      }
      return true;
    }, 60_000);
    const health = await p.http().get('/health');
    expect(health.body.dead_letters).toEqual({ count: 0 });
    expect((await admin(`/admin/v1/dead-letters`)).body.dead_letters).toEqual([]);
  });

  it('documents the dead-letter routes in the OpenAPI document', async () => {
    const doc = await p.http().get('/openapi.json');
    expect(Object.keys(doc.body.paths as object)).toEqual(
      expect.arrayContaining([
        '/admin/v1/dead-letters',
        '/admin/v1/dead-letters/replay',
        '/admin/v1/dead-letters/{id}/replay',
      ]),
    );
  });
});
