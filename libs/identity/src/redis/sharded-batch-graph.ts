import type { Identifier } from '@cdp/domain';
import type { IdentityGraph } from '../resolution.js';

/** A customer's entry on its shard (`cdp:{A#hh}:c`, field its id), JSON. */
export interface ShardedEntry {
  /** Born key. */
  b: string;
  /** customer_id value, when it has one. */
  k?: string;
  /** Identifier keys (`<kind>:<value>`); a merged customer's moved to its survivor. */
  i: string[];
  /** Customers merged into it (directly or through others). */
  a: string[];
  /** The customer it was merged into (its identifiers and history are there now). */
  s?: string;
}

/** The index's name of an identifier: its shard and its field in the shard's `ids` hash. */
export const idKey = (id: Identifier): string => `${id.kind}:${id.value}`;

export function idOfKey(key: string): Identifier {
  const cut = key.indexOf(':');
  return { kind: key.slice(0, cut), value: key.slice(cut + 1) };
}

/**
 * The part of an account's graph one batch reads (its identifiers' owners and those customers'
 * entries, fetched before the rules run), changed in the process by `resolveRecord`; what changed is
 * what the batch writes back, in phases (losers, survivors, identifiers).
 */
export class ShardedBatchGraph implements IdentityGraph {
  private readonly dirtyIds = new Set<string>();
  private readonly dirtyEntries = new Set<string>();

  constructor(
    private readonly owners: Map<string, string | undefined>,
    private readonly entries: Map<string, ShardedEntry>,
    public mergeSeq: number,
  ) {}

  owner(id: Identifier): string | undefined {
    return this.owners.get(idKey(id));
  }
  customerIdOf(c: string): string | undefined {
    return this.entry(c).k;
  }
  bornOf(c: string): string {
    return this.entry(c).b;
  }
  idOf(c: string): string {
    return c;
  }
  create(customerId: string, born: string): string {
    const had = this.entries.get(customerId);
    if (had) had.b = born;
    else this.entries.set(customerId, { b: born, i: [], a: [] });
    this.dirtyEntries.add(customerId);
    return customerId;
  }
  lowerBorn(c: string, born: string): void {
    this.entry(c).b = born;
    this.dirtyEntries.add(c);
  }
  link(id: Identifier, c: string): void {
    const key = idKey(id);
    this.owners.set(key, c);
    this.dirtyIds.add(key);
    const e = this.entry(c);
    e.i.push(key);
    if (id.kind === 'customer_id' && e.k === undefined) e.k = id.value;
    this.dirtyEntries.add(c);
  }
  merge(loser: string, survivor: string): string[] {
    const l = this.entry(loser);
    const s = this.entry(survivor);
    for (const key of l.i) {
      this.owners.set(key, survivor);
      this.dirtyIds.add(key);
    }
    s.i.push(...l.i);
    if (s.k === undefined && l.k !== undefined) s.k = l.k;
    const moved = [loser, ...l.a];
    s.a.push(...moved);
    // Customers merged into the loser before keep pointing at it: a read follows the chain.
    this.entries.set(loser, { b: l.b, i: [], a: [], s: survivor });
    this.dirtyEntries.add(loser);
    this.dirtyEntries.add(survivor);
    return moved;
  }
  nextMergeSeq(): number {
    return ++this.mergeSeq;
  }

  private entry(c: string): ShardedEntry {
    let e = this.entries.get(c);
    if (!e) this.entries.set(c, (e = { b: '', i: [], a: [] }));
    return e;
  }

  /** What the batch changed: merged customers' entries, the other entries, then identifier owners. */
  changes(): {
    losers: [string, ShardedEntry][];
    survivors: [string, ShardedEntry][];
    ids: [string, string][];
  } {
    const dirty = [...this.dirtyEntries].map((c) => [c, this.entries.get(c)!] as [string, ShardedEntry]);
    return {
      losers: dirty.filter(([, e]) => e.s !== undefined),
      survivors: dirty.filter(([, e]) => e.s === undefined),
      ids: [...this.dirtyIds].map((k) => [k, this.owners.get(k)!]),
    };
  }
}
