import { randomUUID } from 'node:crypto';
import { MetadataConflictError, type MetadataStore } from '@cdp/metadata';

const BUCKET = 'recommendations';
const KEY = 'refresh_lease';
/** A refresher silent this long (crashed) is replaced by another. */
export const LEASE_MS = 10_000;

interface Lease {
  owner: string;
  until: number;
}

/**
 * One refresher at a time: several processors (with a ClickHouse server) would otherwise take the same
 * messages into two generations and count them twice. Held in the metadata store (compare-and-set),
 * renewed at every pass, given up at shutdown.
 */
export class RefreshLease {
  private readonly owner = randomUUID();

  constructor(
    private readonly metadata: MetadataStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes or renews the lease; false while another refresher holds it. */
  async hold(): Promise<boolean> {
    const found = await this.metadata.get<Lease>(BUCKET, KEY);
    const mine: Lease = { owner: this.owner, until: this.now() + LEASE_MS };
    try {
      if (!found) await this.metadata.create(BUCKET, KEY, mine);
      else if (found.value.owner !== this.owner && found.value.until > this.now()) return false;
      else await this.metadata.update(BUCKET, KEY, mine, found.revision);
      return true;
    } catch (err) {
      if (err instanceof MetadataConflictError) return false;
      throw err;
    }
  }

  async release(): Promise<void> {
    const found = await this.metadata.get<Lease>(BUCKET, KEY);
    if (found?.value.owner !== this.owner) return;
    await this.metadata
      .update(BUCKET, KEY, { owner: this.owner, until: 0 }, found.revision)
      .catch(() => undefined);
  }
}
