import { identityKey, type Identifier } from '@cdp/domain';
import type { IdentityGraphRows } from '../identity-index.port.js';
import type { IdentityGraph } from '../resolution.js';

/**
 * One account's identity graph in plain maps of strings: the staging area the Redis driver computes a
 * rebuild in (it walks these maps to write its keys). The memory driver keeps the compact form
 * (CompactAccountGraph); the rules and results are the same.
 */
export class AccountGraph implements IdentityGraph {
  /** identity key → customer it resolves to now (always a survivor: merges re-point eagerly). */
  readonly owners = new Map<string, string>();
  /** customer → its identifiers (a survivor's include those of the customers merged into it). */
  readonly members = new Map<string, Identifier[]>();
  readonly customerIds = new Map<string, string>();
  readonly born = new Map<string, string>();
  /** loser → survivor, for every merged customer, kept current through later merges. */
  readonly mergedInto = new Map<string, string>();
  /** survivor → customers merged into it. */
  readonly absorbed = new Map<string, string[]>();
  mergeSeq = 0;

  nextMergeSeq(): number {
    return ++this.mergeSeq;
  }

  owner(id: Identifier): string | undefined {
    return this.owners.get(identityKey(id));
  }

  idOf(customer: string): string {
    return customer;
  }

  customerIdOf(customer: string): string | undefined {
    return this.customerIds.get(customer);
  }

  bornOf(customer: string): string {
    return this.born.get(customer) ?? '';
  }

  create(customer: string, born: string): string {
    this.born.set(customer, born);
    return customer;
  }

  lowerBorn(customer: string, born: string): void {
    this.born.set(customer, born);
  }

  link(id: Identifier, customer: string): void {
    this.owners.set(identityKey(id), customer);
    let list = this.members.get(customer);
    if (!list) this.members.set(customer, (list = []));
    list.push(id);
    if (id.kind === 'customer_id' && !this.customerIds.has(customer))
      this.customerIds.set(customer, id.value);
  }

  merge(loser: string, survivor: string): string[] {
    const ids = this.members.get(loser) ?? [];
    for (const id of ids) this.owners.set(identityKey(id), survivor);
    this.members.delete(loser);
    const list = this.members.get(survivor) ?? [];
    list.push(...ids);
    this.members.set(survivor, list);
    const cid = this.customerIds.get(loser);
    if (cid !== undefined && !this.customerIds.has(survivor)) this.customerIds.set(survivor, cid);
    const moved = [loser, ...(this.absorbed.get(loser) ?? [])];
    this.absorbed.delete(loser);
    for (const c of moved) this.mergedInto.set(c, survivor);
    this.absorbed.set(survivor, [...(this.absorbed.get(survivor) ?? []), ...moved]);
    return moved;
  }

  /** The customer a possibly merged customer's history belongs to now. */
  survivorOf(customer: string): string {
    return this.mergedInto.get(customer) ?? customer;
  }

  /**
   * Rebuilds the graph from the store: links to their first owners, each customer with the least born
   * key its rows carry, then the merges in order.
   */
  static async fromRows(rows: IdentityGraphRows): Promise<AccountGraph> {
    const graph = new AccountGraph();
    const older = (customer: string, born: string) => {
      const had = graph.born.get(customer);
      if (had === undefined || born < had) graph.born.set(customer, born);
    };
    for await (const link of rows.links) {
      older(link.svc_id, link.born);
      graph.link({ kind: link.kind, value: link.value }, link.svc_id);
    }
    for await (const { svc_id, born } of rows.borns) if (graph.born.has(svc_id)) older(svc_id, born);
    for await (const { loser, survivor, seq } of rows.merges) {
      graph.mergeSeq = Math.max(graph.mergeSeq, seq);
      const from = graph.survivorOf(loser);
      const to = graph.survivorOf(survivor);
      if (from !== to) graph.merge(from, to);
    }
    return graph;
  }
}
