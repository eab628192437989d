import { randomBytes, randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AccountsService, type Account } from '@cdp/accounts';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { ApiError } from '@cdp/contracts';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { csrfToken, signSession, verifySession } from './session-cookie.js';

const SESSIONS = 'console_sessions';

interface SessionRecord {
  account: string;
  keyId: string;
  createdAt: string;
  expiresAt: string;
  /** Set by signing out: the session is dead on every replica from then on. */
  endedAt?: string;
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
 * that the session was not signed out (the metadata store: shared by every replica), and that the key it
 * was opened with still authenticates (a revoked key ends its sessions when its grace period ends).
 */
@Injectable()
export class ConsoleSessions {
  private readonly secret: string;

  constructor(
    private readonly accounts: AccountsService,
    private readonly metadata: MetadataStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.secret = config.console.secret ?? randomBytes(32).toString('base64url');
    if (!config.console.secret) {
      logger.info(
        'CDP_CONSOLE_SECRET is not set: console sessions are signed with a key of this process only',
      );
    }
  }

  get ttlMs(): number {
    return this.config.console.sessionTtlMs;
  }

  async signIn(privateKey: unknown, now = Date.now()): Promise<{ cookie: string; session: ConsoleSession }> {
    const principal = await this.accounts.authenticate(
      typeof privateKey === 'string' ? privateKey : undefined,
    );
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
    await this.metadata.create(SESSIONS, sid, record);
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
    const found = await this.metadata.get<SessionRecord>(SESSIONS, claims.sid);
    if (!found || found.value.endedAt || Date.parse(found.value.expiresAt) <= now)
      throw ApiError.unauthorized();
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

  async signOut(sid: string): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const found = await this.metadata.get<SessionRecord>(SESSIONS, sid);
      if (!found || found.value.endedAt) return;
      try {
        await this.metadata.update(
          SESSIONS,
          sid,
          { ...found.value, endedAt: new Date().toISOString() },
          found.revision,
        );
        return;
      } catch {
        // changed meanwhile: read again
      }
    }
  }

  csrfSecret(): string {
    return this.secret;
  }
}
