import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { MetadataConflictError, MetadataStore } from '@cdp/metadata';
import {
  signUnsubscribeToken,
  verifyUnsubscribeToken,
  type TokenCheck,
  type UnsubscribeClaims,
} from './unsubscribe-link.token.js';

const SECRETS_BUCKET = 'secrets';
const SECRET_KEY = 'unsubscribe-links';

/**
 * Makes and checks unsubscribe link tokens with the deployment's secret: `CDP_UNSUBSCRIBE_SECRET`, or
 * when it is unset one generated on first use and kept in the metadata store (create-if-absent, so
 * every replica of every process ends up with the same one).
 */
@Injectable()
export class UnsubscribeLinks {
  private secret: Promise<string> | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metadata: MetadataStore,
  ) {}

  get ttlMs(): number {
    return this.config.unsubscribeLinks.ttlMs;
  }

  async sign(
    claims: Omit<UnsubscribeClaims, 'expiresAt'>,
    now = Date.now(),
  ): Promise<{ token: string; expiresAt: number }> {
    const expiresAt = now + this.ttlMs;
    return { token: signUnsubscribeToken(await this.key(), { ...claims, expiresAt }), expiresAt };
  }

  async verify(token: string, now = Date.now()): Promise<TokenCheck> {
    return verifyUnsubscribeToken(await this.key(), token, now);
  }

  private key(): Promise<string> {
    const configured = this.config.unsubscribeLinks.secret;
    if (configured) return Promise.resolve(configured);
    this.secret ??= this.storedSecret().catch((err: unknown) => {
      this.secret = undefined; // try again on the next request
      throw err;
    });
    return this.secret;
  }

  private async storedSecret(): Promise<string> {
    for (;;) {
      const found = await this.metadata.get<{ secret: string }>(SECRETS_BUCKET, SECRET_KEY);
      if (found) return found.value.secret;
      try {
        const secret = randomBytes(32).toString('base64url');
        await this.metadata.create(SECRETS_BUCKET, SECRET_KEY, { secret });
        return secret;
      } catch (err) {
        if (!(err instanceof MetadataConflictError)) throw err; // another replica made it first: read theirs
      }
    }
  }
}
