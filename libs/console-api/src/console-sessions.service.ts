import { randomBytes, randomUUID } from 'node:crypto';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { AccountsService, type Account } from '@cdp/accounts';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { ApiError } from '@cdp/contracts';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { csrfToken, signSession, verifySession } from './session-cookie.js';

export const SESSIONS_BUCKET = 'console_sessions';
/** The longest an expired session's record stays in the metadata store. */
const SWEEP_MS = 10 * 60_000;

export interface SessionRecord {
  account: string;
  keyId: string;
  createdAt: string;
  expiresAt: string;
}

/** A live console session, as every console call sees it. */
export interface ConsoleSession {
  sid: string;
  account: Account;
  keyId: string;
  expiresAt: number;
  csrf: string;
}

/**
 * Console sign-in: the private key is checked like any private-key call, and the page then holds only a
 * signed, expiring session id in an HttpOnly cookie. Every console call checks the signature, the expiry,
 * that the session was not signed out (its record is in the metadata store: shared by every replica), and
 * that the key it was opened with still authenticates (a revoked key ends its sessions when its grace
 * period ends). Nothing is kept longer than needed: signing out deletes the record, and every replica
 * deletes expired records now and then (deleting one twice is harmless).
 */
@Injectable()
export class ConsoleSessions implements OnModuleInit, OnModuleDestroy {
  private readonly secret: string;
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly accounts: AccountsService,
    private readonly metadata: MetadataStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.secret = config.console.secret ?? randomBytes(32).toString('base64url');
    if (!config.console.secret) {
      logger.info(
        'CDP_CONSOLE_SECRET is not set: console sessions are signed with a key of this process only',
      );
    }
  }

  onModuleInit(): void {
    const every = Math.min(this.ttlMs, SWEEP_MS);
    this.sweeper = setInterval(() => {
      this.sweep().catch((err: unknown) =>
        this.logger.warn({ err }, 'console sessions: expired records not removed this time'),
      );
    }, every);
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  /** Deletes the records of sessions expired at `now`; how many it deleted. */
  async sweep(now = Date.now()): Promise<number> {
    let deleted = 0;
    for (const { key, value } of await this.metadata.list<SessionRecord>(SESSIONS_BUCKET)) {
      if (Date.parse(value.expiresAt) > now) continue;
      await this.metadata.delete(SESSIONS_BUCKET, key);
      deleted++;
    }
    return deleted;
  }

  get ttlMs(): number {
    return this.config.console.sessionTtlMs;
  }

  async signIn(privateKey: string, now = Date.now()): Promise<{ cookie: string; session: ConsoleSession }> {
    const principal = await this.accounts.authenticate(privateKey);
    if (!principal.private || !principal.keyId) {
      throw ApiError.forbidden('the console opens with the private key, not the public key');
    }
    const sid = randomUUID();
    const expiresAt = now + this.ttlMs;
    const record: SessionRecord = {
      account: principal.account,
      keyId: principal.keyId,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(expiresAt).toISOString(),
    };
    await this.metadata.create(SESSIONS_BUCKET, sid, record);
    const account = await this.accounts.get(principal.account);
    return {
      cookie: signSession(this.secret, { sid, exp: expiresAt }),
      session: { sid, account, keyId: principal.keyId, expiresAt, csrf: csrfToken(this.secret, sid) },
    };
  }

  /** The session a cookie holds, or 401. */
  async check(cookie: string | undefined, now = Date.now()): Promise<ConsoleSession> {
    const claims = verifySession(this.secret, cookie, now);
    if (!claims) throw ApiError.unauthorized();
    const found = await this.metadata.get<SessionRecord>(SESSIONS_BUCKET, claims.sid);
    if (!found || Date.parse(found.value.expiresAt) <= now) throw ApiError.unauthorized();
    const account = await this.accounts.keyAccepted(found.value.account, found.value.keyId, now);
    if (!account) throw ApiError.unauthorized();
    return {
      sid: claims.sid,
      account,
      keyId: found.value.keyId,
      expiresAt: Date.parse(found.value.expiresAt),
      csrf: csrfToken(this.secret, claims.sid),
    };
  }

  /** Deletes the session's record: the session is dead on every replica from then on. */
  async signOut(sid: string): Promise<void> {
    await this.metadata.delete(SESSIONS_BUCKET, sid);
  }

  csrfSecret(): string {
    return this.secret;
  }
}
