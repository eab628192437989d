import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { ApiError } from '@cdp/contracts';
import {
  MetadataCache,
  MetadataCacheClock,
  MetadataConflictError,
  MetadataStore,
  updateWithRetry,
} from '@cdp/metadata';
import { constantTimeEqual, hashSecret, isUrlSafeToken, randomToken, splitPrivateKey } from './keys.js';

/** A revoked private key keeps working this long (spec "Authentication" rule 5). */
export const REVOKED_KEY_GRACE_MS = 12 * 60 * 60 * 1000;

export interface PrivateKeyRecord {
  id: string;
  salt: string;
  hash: string;
  createdAt: string;
  revokedAt?: string;
}

export interface Account {
  id: string;
  name: string;
  trackerId: string;
  createdAt: string;
  keys: PrivateKeyRecord[];
  /**
   * Events (and line items) older than this many days are removed from the store; absent: kept
   * forever (the default). Enforced by the store as a TTL (docs/operations.md "Retention").
   */
  eventsRetentionDays?: number;
}

/** What a key authenticated: the account, and whether it was the private key. */
export interface Principal {
  account: string;
  trackerId: string;
  private: boolean;
  /** The id of the private key used (recorded with consent changes); absent for the public key. */
  keyId?: string;
}

/** The account as the admin API shows it: never a secret or its hash. */
export interface AccountView {
  id: string;
  name: string;
  tracker_id: string;
  created_at: string;
  keys: { id: string; created_at: string; revoked_at?: string; expires_at?: string }[];
  /** Days events are kept; `null`: forever. */
  events_retention_days: number | null;
}

const ACCOUNTS = 'accounts';

/** The longest events retention an operator can set (100 years); longer is "forever" (null). */
export const MAX_RETENTION_DAYS = 36_500;

/**
 * An account's events retention as stored, for the store (which reads it at most once a minute per
 * account it writes): no cache here, so a change is seen by the store's next reading.
 */
export async function eventsRetentionOf(metadata: MetadataStore, account: string): Promise<number | null> {
  return (await metadata.get<Account>(ACCOUNTS, account))?.value.eventsRetentionDays ?? null;
}
const TRACKERS = 'trackers';

/** How long an authenticated account is reused without reading the metadata store again (README). */
export const ACCOUNT_CACHE_MS = 5_000;

@Injectable()
export class AccountsService {
  /**
   * Accounts by tracker id, read at most every few seconds: authentication needs no round trip to
   * the metadata store per request, and keeps working (on what it last read) while that store is away.
   */
  private readonly cache: MetadataCache<Account | undefined>;

  constructor(
    private readonly metadata: MetadataStore,
    @MetadataCacheClock() now?: () => number,
  ) {
    this.cache = new MetadataCache({
      ttlMs: ACCOUNT_CACHE_MS,
      load: (trackerId) => this.byTrackerId(trackerId),
      now,
    });
  }

  async create(
    input: { name?: string; trackerId?: string; secret?: string } = {},
  ): Promise<{ account: Account; privateKey: string }> {
    const trackerId = input.trackerId ?? randomToken(12).replaceAll('.', '');
    const secret = input.secret ?? randomToken(32);
    if (!isUrlSafeToken(trackerId))
      throw ApiError.invalid([{ field: 'tracker_id', reason: 'must be URL-safe (A-Z, a-z, 0-9, _ and -)' }]);
    if (!isUrlSafeToken(secret))
      throw ApiError.invalid([{ field: 'secret', reason: 'must be URL-safe (A-Z, a-z, 0-9, _ and -)' }]);
    const id = `a${randomBytes(8).toString('hex')}`;
    const account: Account = {
      id,
      name: input.name ?? trackerId,
      trackerId,
      createdAt: new Date().toISOString(),
      keys: [newKey(secret)],
    };
    try {
      // The tracker id is claimed first, create-if-absent: two concurrent creations cannot both get it.
      await this.metadata.create(TRACKERS, trackerId, id);
    } catch (err) {
      if (err instanceof MetadataConflictError) {
        throw ApiError.invalid([{ field: 'tracker_id', reason: 'already used by another account' }]);
      }
      throw err;
    }
    await this.metadata.create(ACCOUNTS, id, account);
    return { account, privateKey: `${trackerId}.${secret}` };
  }

  async list(): Promise<Account[]> {
    return (await this.metadata.list<Account>(ACCOUNTS)).map((v) => v.value);
  }

  async get(id: string): Promise<Account> {
    const found = await this.metadata.get<Account>(ACCOUNTS, id);
    if (!found) throw ApiError.notFound(`unable to locate account ${id}`);
    return found.value;
  }

  async byTrackerId(trackerId: string): Promise<Account | undefined> {
    const link = await this.metadata.get<string>(TRACKERS, trackerId);
    if (!link) return undefined;
    return (await this.metadata.get<Account>(ACCOUNTS, link.value))?.value;
  }

  private async cachedByTrackerId(trackerId: string, fresh: boolean): Promise<Account | undefined> {
    try {
      return await this.cache.get(trackerId, fresh);
    } catch (err) {
      throw ApiError.unavailable(
        `accounts cannot be read right now: ${err instanceof Error ? err.message : String(err)}`,
        1,
      );
    }
  }

  /**
   * Resolves an API key: a tracker id (public key) or `<tracker id>.<secret>` (private key).
   * Anything else, or a key past its revocation grace, is not authenticated.
   */
  async authenticate(key: string | undefined, now = Date.now()): Promise<Principal> {
    if (!key) throw ApiError.unauthorized();
    const parts = splitPrivateKey(key);
    const trackerId = parts ? parts.trackerId : key;
    // Tracker ids are URL-safe tokens: anything else names no account, and is not looked up.
    if (!isUrlSafeToken(trackerId) || (parts && !isUrlSafeToken(parts.secret))) throw ApiError.unauthorized();
    let account = await this.cachedByTrackerId(trackerId, false);
    if (!account) throw ApiError.unauthorized();
    if (!parts) return { account: account.id, trackerId: account.trackerId, private: false };
    const accepting = (a: Account) =>
      a.keys.find(
        (k) =>
          constantTimeEqual(hashSecret(parts.secret, k.salt), k.hash) &&
          (k.revokedAt === undefined || Date.parse(k.revokedAt) + REVOKED_KEY_GRACE_MS > now),
      );
    let used = accepting(account);
    // A key issued a moment ago (possibly by another replica) is not in a cached copy: read again once.
    if (!used) {
      account = await this.cachedByTrackerId(trackerId, true);
      used = account && accepting(account);
    }
    if (!account || !used) throw ApiError.unauthorized();
    return { account: account.id, trackerId: account.trackerId, private: true, keyId: used.id };
  }

  /**
   * Whether a private key (by id) still authenticates: the console checks its session's key on every
   * call, as the key itself would be checked (revoked keys work for the grace period, then not).
   */
  async keyAccepted(id: string, keyId: string, now = Date.now()): Promise<Account | undefined> {
    const found = await this.metadata.get<Account>(ACCOUNTS, id);
    const key = found?.value.keys.find((k) => k.id === keyId);
    if (!found || !key) return undefined;
    if (key.revokedAt !== undefined && Date.parse(key.revokedAt) + REVOKED_KEY_GRACE_MS <= now)
      return undefined;
    return found.value;
  }

  /** Issues a new private key; the keys in use so far are revoked and keep working for the grace period. */
  async rotate(id: string): Promise<{ account: Account; privateKey: string }> {
    const secret = randomToken(32);
    const account = await this.change(id, (a) => {
      const now = new Date().toISOString();
      for (const k of a.keys) k.revokedAt ??= now;
      a.keys.push(newKey(secret));
    });
    return { account, privateKey: `${account.trackerId}.${secret}` };
  }

  /** Sets how many days the account's events are kept (`null`: forever). */
  async setEventsRetention(id: string, days: number | null): Promise<Account> {
    if (days !== null && (!Number.isInteger(days) || days < 1 || days > MAX_RETENTION_DAYS))
      throw ApiError.invalid([
        {
          field: 'events_days',
          reason: `must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null (forever)`,
        },
      ]);
    return this.change(id, (a) => {
      if (days === null) delete a.eventsRetentionDays;
      else a.eventsRetentionDays = days;
    });
  }

  async revoke(id: string, keyId: string): Promise<Account> {
    return this.change(id, (a) => {
      const key = a.keys.find((k) => k.id === keyId);
      if (!key) throw ApiError.notFound(`unable to locate key ${keyId} of account ${id}`);
      key.revokedAt ??= new Date().toISOString();
    });
  }

  /**
   * Makes sure the account of a configured key pair exists and accepts that private key; running it
   * again changes nothing.
   */
  async ensure(publicKey: string, privateKey: string): Promise<Account> {
    const parts = splitPrivateKey(privateKey);
    if (!parts || parts.trackerId !== publicKey) {
      throw new Error('the bootstrap private key must be `<public key>.<secret>`');
    }
    let existing = await this.byTrackerId(publicKey);
    if (!existing) {
      try {
        return (await this.create({ trackerId: publicKey, secret: parts.secret })).account;
      } catch (err) {
        // Another replica starting at the same moment claimed it first: go on with theirs, once its
        // account record (written right after the claim) is there.
        for (let i = 0; i < 40 && !existing; i++) {
          await new Promise((r) => setTimeout(r, 50));
          existing = await this.byTrackerId(publicKey);
        }
        if (!existing) throw err;
      }
    }
    // A key the operator revoked stays revoked: configuration does not bring it back.
    const known = existing.keys.some((k) => constantTimeEqual(hashSecret(parts.secret, k.salt), k.hash));
    if (known) return existing;
    return this.change(existing.id, (a) => void a.keys.push(newKey(parts.secret)));
  }

  private async change(id: string, mutate: (a: Account) => void): Promise<Account> {
    const { value } = await updateWithRetry<Account>(this.metadata, ACCOUNTS, id, (found) => {
      if (!found) throw ApiError.notFound(`unable to locate account ${id}`);
      mutate(found.value);
      return found.value;
    });
    return value;
  }
}

function newKey(secret: string): PrivateKeyRecord {
  const salt = randomToken(16);
  return {
    id: `k${randomBytes(6).toString('hex')}`,
    salt,
    hash: hashSecret(secret, salt),
    createdAt: new Date().toISOString(),
  };
}

export function viewAccount(a: Account): AccountView {
  return {
    id: a.id,
    name: a.name,
    tracker_id: a.trackerId,
    created_at: a.createdAt,
    keys: a.keys.map((k) => ({
      id: k.id,
      created_at: k.createdAt,
      ...(k.revokedAt
        ? {
            revoked_at: k.revokedAt,
            expires_at: new Date(Date.parse(k.revokedAt) + REVOKED_KEY_GRACE_MS).toISOString(),
          }
        : {}),
    })),
    events_retention_days: a.eventsRetentionDays ?? null,
  };
}
