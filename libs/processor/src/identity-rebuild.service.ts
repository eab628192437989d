import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ConsentState, IdentifierState } from '@cdp/consent';
import { IdentityIndex, ProfileState } from '@cdp/identity';
import { LOGGER, type Logger } from '@cdp/logger';
import { MetadataStore } from '@cdp/metadata';
import { AccountRebuild } from './account-rebuild.js';
import { AnalyticStore } from '@cdp/store';

/**
 * Rebuilds an account's identity index, hot profiles and list memberships from the store, which holds every link and
 * profile snapshot: what Redis (or memory) holds can always be recovered from it.
 *
 * A memory index is rebuilt for every account at start, before anything is processed or read. A
 * Redis index is rebuilt when it turns out not to hold an account (flushed, replaced or new): the
 * first batch of that account finds it cold and asks for a rebuild.
 */
@Injectable()
export class IdentityRebuild extends AccountRebuild implements OnModuleInit {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly consent: ConsentState,
    private readonly store: AnalyticStore,
    metadata: MetadataStore,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly identifierState: IdentifierState,
  ) {
    super(metadata, 'identity index');
  }

  async onModuleInit(): Promise<void> {
    if (!this.identity.persistent) await this.rebuildAll();
  }

  protected async run(account: string): Promise<boolean> {
    if (!(await this.identity.beginRebuild(account))) return false;
    try {
      const started = Date.now();
      // List memberships, like profiles, before the index opens the account again.
      await this.consent.load(account, this.store.consentStates(account));
      await this.identifierState.load(account, this.store.identifierUpdates(account));
      // Profiles first: the index opens the account again only once both are loaded.
      const profiles = await this.profiles.load(account, this.store.currentProfiles(account));
      await this.profiles.loadOptOutPool(account, this.store.optOutPool(account));
      const links = await this.identity.load(account, this.store.identityGraph(account));
      this.logger.info(
        { account, links, profiles, ms: Date.now() - started },
        'identity index rebuilt from the store',
      );
    } finally {
      await this.identity.endRebuild(account);
    }
    return true;
  }
}
