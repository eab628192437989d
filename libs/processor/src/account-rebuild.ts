import type { MetadataStore } from '@cdp/metadata';

/**
 * What every rebuild of hot state from the store shares: one run per account at a time in this
 * process (callers arriving meanwhile join it), and a pass over every account at start for the
 * drivers that keep nothing across restarts. `run` returns false when another process holds the
 * account's rebuild (try again later).
 */
export abstract class AccountRebuild {
  private readonly running = new Map<string, Promise<boolean>>();

  protected constructor(
    private readonly metadata: MetadataStore,
    private readonly what: string,
  ) {}

  protected abstract run(account: string): Promise<boolean>;

  async rebuildAll(): Promise<void> {
    for (const { key: account } of await this.metadata.list('accounts')) {
      if (!(await this.rebuild(account)))
        throw new Error(`the ${this.what} of account ${account} is being rebuilt by another process`);
    }
  }

  /** Rebuilds one account; false when another process holds the rebuild (try again later). */
  rebuild(account: string): Promise<boolean> {
    let run = this.running.get(account);
    if (!run) {
      run = this.run(account).finally(() => this.running.delete(account));
      this.running.set(account, run);
    }
    return run;
  }
}
