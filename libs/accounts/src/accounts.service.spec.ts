import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError, type Invalid } from '@cdp/contracts';
import { FileMetadataStore } from '@cdp/metadata/file';
import { OutageMetadataStore } from '@cdp/metadata';
import {
  ACCOUNT_CACHE_MS,
  AccountsService,
  REVOKED_KEY_GRACE_MS,
  eventsRetentionOf,
  viewAccount,
  type Account,
} from './accounts.service.js';
import { splitPrivateKey } from './keys.js';
import { eventually } from '../../../test/support/eventually.js';

const TWELVE_HOURS = 12 * 60 * 60 * 1000;

let dir: string;
let store: FileMetadataStore;
let accounts: AccountsService;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdp-accounts-'));
  store = new FileMetadataStore(dir);
  accounts = new AccountsService(store);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Everything the metadata store wrote to disk. */
function storedText(): string {
  return readdirSync(dir)
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function expectUnauthorized(promise: Promise<unknown>): Promise<void> {
  const err = await rejection(promise);
  expect(err).toBeInstanceOf(ApiError);
  expect(err).toMatchObject({ status: 401, detail: { message: 'could not be authenticated' } });
}

async function expectInvalid(promise: Promise<unknown>, field: string): Promise<void> {
  const err = await rejection(promise);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).status).toBe(400);
  const invalids = (err as ApiError & { detail: { invalids: Invalid[] } }).detail.invalids;
  expect(invalids).toEqual([{ field, reason: expect.any(String) }]);
}

function revokedAtMs(account: Account, keyIndex: number): number {
  const revokedAt = account.keys[keyIndex]?.revokedAt;
  if (revokedAt === undefined) throw new Error(`key ${keyIndex} is not revoked`);
  return Date.parse(revokedAt);
}

describe('AccountsService', () => {
  it('uses a 12-hour grace for revoked keys', () => {
    expect(REVOKED_KEY_GRACE_MS).toBe(TWELVE_HOURS);
  });

  describe('create', () => {
    it('returns a private key `<tracker id>.<secret>` and the account', async () => {
      const { account, privateKey } = await accounts.create({ name: 'Shop' });
      const parts = splitPrivateKey(privateKey);
      expect(parts).toBeDefined();
      expect(parts!.trackerId).toBe(account.trackerId);
      expect(parts!.trackerId).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(parts!.secret).toMatch(/^[A-Za-z0-9_-]{32,}$/);
      expect(account.name).toBe('Shop');
      expect(account.keys).toHaveLength(1);
      expect(account.keys[0]!.revokedAt).toBeUndefined();
      expect(await accounts.list()).toEqual([account]);
      expect(await accounts.get(account.id)).toEqual(account);
    });

    it('uses the tracker id and secret it is given; the name defaults to the tracker id', async () => {
      const { account, privateKey } = await accounts.create({ trackerId: 'shop-1', secret: 'S3cret_value' });
      expect(privateKey).toBe('shop-1.S3cret_value');
      expect(account.trackerId).toBe('shop-1');
      expect(account.name).toBe('shop-1');
    });

    it('gives every account its own tracker id, secret and id', async () => {
      const a = await accounts.create();
      const b = await accounts.create();
      expect(a.account.id).not.toBe(b.account.id);
      expect(a.account.trackerId).not.toBe(b.account.trackerId);
      expect(a.privateKey).not.toBe(b.privateKey);
      expect(await accounts.list()).toHaveLength(2);
    });

    it('stores only a salted hash of the secret', async () => {
      const { account, privateKey } = await accounts.create({ trackerId: 'hashme' });
      const secret = splitPrivateKey(privateKey)!.secret;
      const text = storedText();
      expect(text).toContain(account.trackerId); // the right files were read
      expect(text).toContain(account.keys[0]!.hash);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(privateKey);
      expect(JSON.stringify(account)).not.toContain(secret);
    });

    it('hashes the same secret differently for two accounts', async () => {
      const a = await accounts.create({ trackerId: 'one', secret: 'same-secret' });
      const b = await accounts.create({ trackerId: 'two', secret: 'same-secret' });
      expect(a.account.keys[0]!.hash).not.toBe(b.account.keys[0]!.hash);
      expect(storedText()).not.toContain('same-secret');
    });

    it('refuses a tracker id that is already used, leaving the first account intact', async () => {
      const first = await accounts.create({ trackerId: 'taken' });
      await expectInvalid(accounts.create({ trackerId: 'taken' }), 'tracker_id');
      expect(await accounts.list()).toHaveLength(1);
      expect(await accounts.authenticate(first.privateKey)).toMatchObject({
        account: first.account.id,
        private: true,
      });
    });

    it('lets only one of two concurrent creations claim a tracker id', async () => {
      const results = await Promise.allSettled([
        accounts.create({ trackerId: 'race' }),
        accounts.create({ trackerId: 'race' }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const failed = results.find((r) => r.status === 'rejected');
      expect(failed?.reason).toBeInstanceOf(ApiError);
      expect(await accounts.list()).toHaveLength(1);
    });

    it.each(['', 'a.b', 'a b', 'a/b', 'ü', 'x'.repeat(129)])(
      'refuses the tracker id %j',
      async (trackerId) => {
        await expectInvalid(accounts.create({ trackerId }), 'tracker_id');
        expect(await accounts.list()).toEqual([]);
      },
    );

    it.each(['', 'a.b', 'a b', 'x'.repeat(129)])('refuses the secret %j', async (secret) => {
      await expectInvalid(accounts.create({ trackerId: 'fine', secret }), 'secret');
      expect(await accounts.list()).toEqual([]);
      // the tracker id is still free
      await expect(accounts.create({ trackerId: 'fine' })).resolves.toBeDefined();
    });
  });

  describe('authenticate', () => {
    it('takes the tracker id as the public key', async () => {
      const { account } = await accounts.create();
      expect(await accounts.authenticate(account.trackerId)).toEqual({
        account: account.id,
        trackerId: account.trackerId,
        private: false,
      });
    });

    it('takes the private key as the private key', async () => {
      const { account, privateKey } = await accounts.create();
      expect(await accounts.authenticate(privateKey)).toEqual({
        account: account.id,
        trackerId: account.trackerId,
        private: true,
        keyId: account.keys[0]!.id,
      });
    });

    it('tells accounts apart', async () => {
      const a = await accounts.create();
      const b = await accounts.create();
      expect((await accounts.authenticate(a.privateKey)).account).toBe(a.account.id);
      expect((await accounts.authenticate(b.account.trackerId)).account).toBe(b.account.id);
    });

    it('refuses a wrong secret', async () => {
      const { account, privateKey } = await accounts.create();
      await expectUnauthorized(accounts.authenticate(`${account.trackerId}.wrong-secret`));
      await expectUnauthorized(accounts.authenticate(`${privateKey}x`));
      await expectUnauthorized(accounts.authenticate(privateKey.slice(0, -1)));
    });

    it("refuses another account's secret", async () => {
      const a = await accounts.create();
      const b = await accounts.create();
      const secretOfB = splitPrivateKey(b.privateKey)!.secret;
      await expectUnauthorized(accounts.authenticate(`${a.account.trackerId}.${secretOfB}`));
    });

    it('refuses an unknown tracker id, with or without a secret', async () => {
      const { privateKey } = await accounts.create();
      const secret = splitPrivateKey(privateKey)!.secret;
      await expectUnauthorized(accounts.authenticate('nobody'));
      await expectUnauthorized(accounts.authenticate(`nobody.${secret}`));
      await expectUnauthorized(accounts.authenticate(secret));
    });

    it('refuses a missing key', async () => {
      await accounts.create();
      await expectUnauthorized(accounts.authenticate(undefined));
      await expectUnauthorized(accounts.authenticate(''));
    });

    it('refuses malformed keys', async () => {
      const { privateKey } = await accounts.create({ trackerId: 'shop' });
      const secret = splitPrivateKey(privateKey)!.secret;
      for (const key of [
        '.',
        `.${secret}`,
        'shop.',
        `shop..${secret}`,
        `${privateKey}.extra`,
        ` ${privateKey}`,
        'shop ',
        'SHOP',
        `SHOP.${secret}`,
        `shop:${secret}`,
      ]) {
        await expectUnauthorized(accounts.authenticate(key));
      }
    });

    it('keeps working from a new service on the same data directory', async () => {
      const { account, privateKey } = await accounts.create();
      await store.close();
      const reopened = new AccountsService(new FileMetadataStore(dir));
      expect(await reopened.authenticate(privateKey)).toMatchObject({ account: account.id, private: true });
      expect(await reopened.authenticate(account.trackerId)).toMatchObject({
        account: account.id,
        private: false,
      });
    });
  });

  describe('rotate', () => {
    it('issues a new key; the old one works for 12 hours, then no more', async () => {
      const created = await accounts.create();
      const before = Date.now();
      const { account, privateKey } = await accounts.rotate(created.account.id);
      const after = Date.now();

      expect(privateKey).not.toBe(created.privateKey);
      expect(splitPrivateKey(privateKey)!.trackerId).toBe(created.account.trackerId);
      expect(account.keys).toHaveLength(2);
      expect(account.keys[1]!.revokedAt).toBeUndefined();
      const revoked = revokedAtMs(account, 0);
      expect(revoked).toBeGreaterThanOrEqual(before - 1);
      expect(revoked).toBeLessThanOrEqual(after);

      expect(await accounts.authenticate(privateKey, revoked)).toMatchObject({ private: true });
      expect(await accounts.authenticate(created.privateKey, revoked)).toMatchObject({ private: true });
      expect(await accounts.authenticate(created.privateKey, revoked + TWELVE_HOURS - 1)).toMatchObject({
        private: true,
      });
      await expectUnauthorized(accounts.authenticate(created.privateKey, revoked + TWELVE_HOURS));
      await expectUnauthorized(accounts.authenticate(created.privateKey, revoked + 730 * TWELVE_HOURS));
      expect(await accounts.authenticate(privateKey, revoked + 730 * TWELVE_HOURS)).toMatchObject({
        private: true,
      });
      // the public key is unaffected
      expect(await accounts.authenticate(created.account.trackerId, revoked + TWELVE_HOURS)).toMatchObject({
        private: false,
      });
    });

    it('persists the rotation', async () => {
      const created = await accounts.create();
      const { privateKey } = await accounts.rotate(created.account.id);
      const stored = await accounts.get(created.account.id);
      expect(stored.keys).toHaveLength(2);
      expect(stored.keys[0]!.revokedAt).toBeDefined();
      expect(storedText()).not.toContain(splitPrivateKey(privateKey)!.secret);
      const reopened = new AccountsService(new FileMetadataStore(dir));
      expect(await reopened.authenticate(privateKey)).toMatchObject({ private: true });
    });

    it('does not move the revocation time of a key revoked earlier', async () => {
      const created = await accounts.create();
      const first = await accounts.rotate(created.account.id);
      const firstRevoked = first.account.keys[0]!.revokedAt;
      const second = await accounts.rotate(created.account.id);
      expect(second.account.keys).toHaveLength(3);
      expect(second.account.keys[0]!.revokedAt).toBe(firstRevoked);
      expect(second.account.keys[1]!.revokedAt).toBeDefined();
      expect(second.account.keys[2]!.revokedAt).toBeUndefined();
      const now = revokedAtMs(second.account, 1);
      expect(await accounts.authenticate(second.privateKey, now)).toMatchObject({ private: true });
      expect(await accounts.authenticate(first.privateKey, now)).toMatchObject({ private: true });
    });

    it('answers 404 for an unknown account', async () => {
      const err = await rejection(accounts.rotate('a-missing'));
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(404);
    });
  });

  describe('revoke', () => {
    it('keeps the revoked key working for 12 hours, then refuses it', async () => {
      const { account: created, privateKey } = await accounts.create();
      const account = await accounts.revoke(created.id, created.keys[0]!.id);
      const revoked = revokedAtMs(account, 0);
      expect(await accounts.authenticate(privateKey, revoked + TWELVE_HOURS - 1)).toMatchObject({
        private: true,
      });
      await expectUnauthorized(accounts.authenticate(privateKey, revoked + TWELVE_HOURS));
      expect(await accounts.authenticate(created.trackerId, revoked + TWELVE_HOURS)).toMatchObject({
        private: false,
      });
    });

    it('revokes only the key named', async () => {
      const created = await accounts.create();
      const rotated = await accounts.rotate(created.account.id);
      const newKeyId = rotated.account.keys[1]!.id;
      const account = await accounts.revoke(created.account.id, newKeyId);
      const revoked = revokedAtMs(account, 1);
      await expectUnauthorized(accounts.authenticate(rotated.privateKey, revoked + TWELVE_HOURS));
      expect(await accounts.authenticate(rotated.privateKey, revoked + TWELVE_HOURS - 1)).toMatchObject({
        private: true,
      });
    });

    it('revoking twice keeps the first revocation time', async () => {
      const { account: created } = await accounts.create();
      const once = await accounts.revoke(created.id, created.keys[0]!.id);
      // The clock has moved past the first revocation, so a second one that overwrote it would show.
      await eventually(() => Date.now() > Date.parse(once.keys[0]!.revokedAt!));
      const twice = await accounts.revoke(created.id, created.keys[0]!.id);
      expect(twice.keys[0]!.revokedAt).toBe(once.keys[0]!.revokedAt);
    });

    it('answers 404 for an unknown key or account', async () => {
      const { account } = await accounts.create();
      for (const call of [
        accounts.revoke(account.id, 'k-missing'),
        accounts.revoke('a-missing', account.keys[0]!.id),
      ]) {
        const err = await rejection(call);
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).status).toBe(404);
      }
      expect((await accounts.get(account.id)).keys[0]!.revokedAt).toBeUndefined();
    });
  });

  describe('ensure', () => {
    it('creates the account of a configured key pair, accepting both keys', async () => {
      const account = await accounts.ensure('boot', 'boot.bootSecret_1');
      expect(account.trackerId).toBe('boot');
      expect(await accounts.authenticate('boot')).toEqual({
        account: account.id,
        trackerId: 'boot',
        private: false,
      });
      expect(await accounts.authenticate('boot.bootSecret_1')).toEqual({
        account: account.id,
        trackerId: 'boot',
        private: true,
        keyId: account.keys[0]!.id,
      });
      expect(storedText()).not.toContain('bootSecret_1');
    });

    it('is idempotent: twice gives one account with one key', async () => {
      const first = await accounts.ensure('boot', 'boot.secret');
      const second = await accounts.ensure('boot', 'boot.secret');
      expect(second.id).toBe(first.id);
      const all = await accounts.list();
      expect(all).toHaveLength(1);
      expect(all[0]!.keys).toHaveLength(1);
    });

    it('is idempotent across restarts', async () => {
      const first = await accounts.ensure('boot', 'boot.secret');
      await store.close();
      const reopened = new AccountsService(new FileMetadataStore(dir));
      expect((await reopened.ensure('boot', 'boot.secret')).id).toBe(first.id);
      const all = await reopened.list();
      expect(all).toHaveLength(1);
      expect(all[0]!.keys).toHaveLength(1);
    });

    it.each(['a', 'A', '0', '_', '-', 'My_Tracker-01', 'x'.repeat(128), 'abcDEF123_-'])(
      'accepts the URL-safe tracker id %j',
      async (trackerId) => {
        const account = await accounts.ensure(trackerId, `${trackerId}.secret`);
        expect(account.trackerId).toBe(trackerId);
        expect(await accounts.authenticate(`${trackerId}.secret`)).toMatchObject({
          account: account.id,
          private: true,
        });
        expect(await accounts.authenticate(trackerId)).toMatchObject({ account: account.id, private: false });
      },
    );

    it.each(['a b', 'a/b', 'ü', 'a+b', 'x'.repeat(129)])('refuses the tracker id %j', async (trackerId) => {
      await expect(accounts.ensure(trackerId, `${trackerId}.secret`)).rejects.toMatchObject({ status: 400 });
      expect(await accounts.list()).toEqual([]);
    });

    it('refuses a private key that does not belong to the public key', async () => {
      await expect(accounts.ensure('boot', 'other.secret')).rejects.toThrow();
      await expect(accounts.ensure('boot', 'boot')).rejects.toThrow();
      await expect(accounts.ensure('boot', 'boot.')).rejects.toThrow();
      expect(await accounts.list()).toEqual([]);
    });

    it('adds a new configured secret to an existing account; the earlier key keeps working', async () => {
      const first = await accounts.ensure('boot', 'boot.one');
      const second = await accounts.ensure('boot', 'boot.two');
      expect(second.id).toBe(first.id);
      expect(second.keys).toHaveLength(2);
      expect(await accounts.authenticate('boot.one')).toMatchObject({ private: true });
      expect(await accounts.authenticate('boot.two')).toMatchObject({ private: true });
      expect(await accounts.list()).toHaveLength(1);
    });

    it('takes an account created with the same tracker id as it is', async () => {
      const { account } = await accounts.create({ trackerId: 'boot', secret: 'secret' });
      expect((await accounts.ensure('boot', 'boot.secret')).id).toBe(account.id);
      expect((await accounts.get(account.id)).keys).toHaveLength(1);
    });
  });

  describe('viewAccount', () => {
    it('shows keys without secrets, hashes or salts, with the expiry of revoked keys', async () => {
      const created = await accounts.create({ name: 'Shop' });
      const { account } = await accounts.rotate(created.account.id);
      const view = viewAccount(account);
      expect(view).toEqual({
        id: account.id,
        name: 'Shop',
        tracker_id: account.trackerId,
        created_at: account.createdAt,
        keys: [
          {
            id: account.keys[0]!.id,
            created_at: account.keys[0]!.createdAt,
            revoked_at: account.keys[0]!.revokedAt,
            expires_at: new Date(revokedAtMs(account, 0) + TWELVE_HOURS).toISOString(),
          },
          { id: account.keys[1]!.id, created_at: account.keys[1]!.createdAt },
        ],
        events_retention_days: null,
      });
      const text = JSON.stringify(view);
      for (const k of account.keys) {
        expect(text).not.toContain(k.hash);
        expect(text).not.toContain(k.salt);
      }
    });
  });

  describe('events retention', () => {
    it('keeps events forever until the operator sets days, and back to forever with null', async () => {
      const { account } = await accounts.create({ name: 'Kept' });
      expect(await eventsRetentionOf(store, account.id)).toBeNull();
      expect(viewAccount(await accounts.setEventsRetention(account.id, 90)).events_retention_days).toBe(90);
      expect(await eventsRetentionOf(store, account.id)).toBe(90);
      await accounts.setEventsRetention(account.id, null);
      expect(await eventsRetentionOf(store, account.id)).toBeNull();
    });

    it('refuses days that are not a whole number from 1 to 36500', async () => {
      const { account } = await accounts.create();
      for (const days of [0, -1, 1.5, 36_501]) {
        const err = await rejection(accounts.setEventsRetention(account.id, days));
        expect((err as ApiError).status).toBe(400);
      }
      expect(((await rejection(accounts.setEventsRetention('a-missing', 30))) as ApiError).status).toBe(404);
    });
  });

  it('answers 404 for an unknown account id', async () => {
    const err = await rejection(accounts.get('a-missing'));
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(404);
  });
});

describe('AccountsService.ensure under concurrency', () => {
  it('lets replicas starting together ensure the same bootstrap account: one account, every call succeeds', async () => {
    const service = new AccountsService(new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-ensure-'))));
    const results = await Promise.all(Array.from({ length: 5 }, () => service.ensure('boot', 'boot.s3cret')));
    expect(new Set(results.map((a) => a.id)).size).toBe(1);
    expect(await service.list()).toHaveLength(1);
    expect((await service.authenticate('boot.s3cret')).private).toBe(true);
  });
});

describe('the account cache of a replica (README: key changes reach every replica within 5 seconds)', () => {
  let shared: OutageMetadataStore;
  let t: number;
  let replica: AccountsService;
  let other: AccountsService;
  beforeEach(() => {
    shared = new OutageMetadataStore(store);
    t = 1_000_000;
    replica = new AccountsService(shared, () => t);
    other = new AccountsService(store);
  });

  it('keeps an account 5 seconds: one created elsewhere under a tracker id it found unknown shows after that', async () => {
    expect(ACCOUNT_CACHE_MS).toBe(5_000);
    await expectUnauthorized(replica.authenticate('late'));
    await other.create({ trackerId: 'late' });
    t += ACCOUNT_CACHE_MS;
    await expectUnauthorized(replica.authenticate('late'));
    t += 1;
    expect(await replica.authenticate('late')).toMatchObject({ private: false });
  });

  it('checks a private key just issued elsewhere against a fresh read at once', async () => {
    const { account } = await other.create({ trackerId: 'rot' });
    expect((await replica.authenticate('rot')).account).toBe(account.id);
    const { privateKey } = await other.rotate(account.id);
    expect(await replica.authenticate(privateKey)).toMatchObject({ account: account.id, private: true });
  });

  it('reads the store once for concurrent requests with the same key', async () => {
    const { privateKey } = await other.create({ trackerId: 'busy' });
    const results = await Promise.all(Array.from({ length: 20 }, () => replica.authenticate(privateKey)));
    expect(results.every((r) => r.private)).toBe(true);
    expect(shared.gets).toBe(2); // the tracker id's link, then its account
  });

  it('authenticates with the last copy while the store is unreachable; an unread account is 503', async () => {
    const { privateKey } = await other.create({ trackerId: 'steady' });
    await other.create({ trackerId: 'unread' });
    expect((await replica.authenticate(privateKey)).private).toBe(true);
    shared.reachable = false;
    t += 60_000;
    expect((await replica.authenticate(privateKey)).private).toBe(true);
    expect((await replica.authenticate('steady')).private).toBe(false);
    const err = await rejection(replica.authenticate('unread'));
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(503);
  });
});
