import type { DriverHealth } from '@cdp/contracts';
import { customerIdFromSeed, identityKey, type Identifier } from '@cdp/domain';
import { IdentityIndex, type Resolution } from '../identity-index.port.js';

/** The embedded identity index: a map per account, rebuilt from the store's links at start. */
export class MemoryIdentityIndex extends IdentityIndex {
  readonly persistent = false;
  private readonly accounts = new Map<string, Map<string, string>>();

  private of(account: string): Map<string, string> {
    let links = this.accounts.get(account);
    if (!links) this.accounts.set(account, (links = new Map<string, string>()));
    return links;
  }

  resolve(account: string, records: Identifier[][], seeds: string[]): Promise<Resolution[]> {
    const links = this.of(account);
    const out = records.map((ids, index): Resolution => {
      // Identifiers come in resolution order (customer_id, email, then the rest): the first known one wins.
      let customerId: string | undefined;
      for (const id of ids) {
        customerId = links.get(identityKey(id));
        if (customerId) break;
      }
      const created = customerId === undefined;
      customerId ??= customerIdFromSeed(seeds[index]!);
      const linked: Identifier[] = [];
      for (const id of ids) {
        const key = identityKey(id);
        if (!links.has(key)) {
          links.set(key, customerId);
          linked.push(id);
        }
      }
      return { customerId, created, linked };
    });
    return Promise.resolve(out);
  }

  lookup(account: string, id: Identifier): Promise<string | undefined> {
    return Promise.resolve(this.accounts.get(account)?.get(identityKey(id)));
  }

  /** The memory index is rebuilt once, at start, before anything runs: nobody else can be rebuilding. */
  beginRebuild(): Promise<boolean> {
    return Promise.resolve(true);
  }

  async load(
    account: string,
    links: AsyncIterable<{ kind: string; value: string; svc_id: string }>,
  ): Promise<number> {
    const fresh = new Map<string, string>();
    for await (const link of links) fresh.set(identityKey(link), link.svc_id);
    this.accounts.set(account, fresh);
    return fresh.size;
  }

  health(): Promise<DriverHealth> {
    let size = 0;
    for (const links of this.accounts.values()) size += links.size;
    return Promise.resolve({ driver: 'memory', ready: true, detail: `${size} identifier(s)` });
  }

  close(): Promise<void> {
    this.accounts.clear();
    return Promise.resolve();
  }
}
