import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { LOGGER, type Logger } from '@cdp/logger';
import { AccountsService } from './accounts.service.js';

export const CREATE_FIRST_ACCOUNT = Symbol('CREATE_FIRST_ACCOUNT');

/**
 * At start: the account of CDP_BOOTSTRAP_PUBLIC_KEY / CDP_BOOTSTRAP_PRIVATE_KEY exists (idempotent);
 * or, in the all-in-one process with neither set and no account at all, one is created and its keys
 * are printed once, so a fresh install can be used at once.
 */
@Injectable()
export class AccountsBootstrap implements OnApplicationBootstrap {
  /** The keys of the account created at this start, for the start-up banner; unset when none was. */
  createdKeys: { publicKey: string; privateKey: string } | undefined;

  constructor(
    private readonly accounts: AccountsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(CREATE_FIRST_ACCOUNT) private readonly createFirst: boolean,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { bootstrap } = this.config;
    if (bootstrap) {
      const account = await this.accounts.ensure(bootstrap.publicKey, bootstrap.privateKey);
      this.logger.info({ account: account.id, publicKey: account.trackerId }, 'bootstrap account ready');
      return;
    }
    if (!this.createFirst || (await this.accounts.list()).length > 0) return;
    const { account, privateKey } = await this.accounts.create({ name: 'default' });
    this.createdKeys = { publicKey: account.trackerId, privateKey };
    this.logger.info(
      { account: account.id, publicKey: account.trackerId, privateKey },
      'created the first account; its private key is shown only this once',
    );
  }
}
