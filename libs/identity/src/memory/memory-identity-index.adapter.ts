import type { DriverHealth } from '@cdp/contracts';
import type { Identifier } from '@cdp/domain';
import { IdentityIndex, type IdentityGraphRows } from '../identity-index.port.js';
import { resolveRecord, type ResolveInput, type Resolution } from '../resolution.js';
import { CompactAccountGraph } from './compact-account-graph.js';

interface AccountState {
  graph: CompactAccountGraph;
  /** message → the resolutions of its records, while its effects may not be in the store yet. */
  unsettled: Map<string, Resolution[]>;
}

/**
 * The embedded identity index: a compact graph per account in memory (CompactAccountGraph), rebuilt
 * from the store at start.
 */
export class MemoryIdentityIndex extends IdentityIndex {
  readonly persistent = false;
  private readonly accounts = new Map<string, AccountState>();

  private of(account: string): AccountState {
    let state = this.accounts.get(account);
    if (!state)
      this.accounts.set(account, (state = { graph: new CompactAccountGraph(), unsettled: new Map() }));
    return state;
  }

  resolve(account: string, records: ResolveInput[]): Promise<Resolution[]> {
    const { graph, unsettled } = this.of(account);
    const fresh = new Map<string, Resolution[]>();
    const out = records.map((record) => {
      const remembered = unsettled.get(record.message)?.[record.index];
      if (remembered) return remembered;
      const resolution = resolveRecord(graph, record);
      let list = fresh.get(record.message);
      if (!list) fresh.set(record.message, (list = []));
      list[record.index] = resolution;
      return resolution;
    });
    for (const [message, list] of fresh) if (list.some(hasEffects)) unsettled.set(message, list);
    return Promise.resolve(out);
  }

  settle(account: string, messages: string[]): Promise<void> {
    const state = this.accounts.get(account);
    for (const m of messages) state?.unsettled.delete(m);
    return Promise.resolve();
  }

  lookup(account: string, id: Identifier): Promise<string | undefined> {
    const graph = this.accounts.get(account)?.graph;
    const owner = graph?.owner(id);
    return Promise.resolve(owner === undefined ? undefined : graph!.idOf(owner));
  }

  absorbedBy(account: string, customerId: string): Promise<string[]> {
    const graph = this.accounts.get(account)?.graph;
    const customer = graph?.customer(customerId);
    return Promise.resolve(customer === undefined ? [] : graph!.absorbedBy(customer));
  }

  identifiersOf(account: string, customerId: string): Promise<Identifier[]> {
    const graph = this.accounts.get(account)?.graph;
    const customer = graph?.customer(customerId);
    return Promise.resolve(customer === undefined ? [] : graph!.identifiersOf(graph!.survivorOf(customer)));
  }

  /** The memory index is rebuilt once, at start, before anything runs: nobody else can be rebuilding. */
  beginRebuild(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** Nothing to close: the memory profiles are loaded with the index, at start, and never refuse. */
  closeAccount(): Promise<void> {
    return Promise.resolve();
  }

  endRebuild(): Promise<void> {
    return Promise.resolve();
  }

  async load(account: string, rows: IdentityGraphRows): Promise<number> {
    const graph = await CompactAccountGraph.fromRows(rows);
    this.accounts.set(account, { graph, unsettled: new Map() });
    return graph.identifierCount;
  }

  health(): Promise<DriverHealth> {
    let size = 0;
    for (const { graph } of this.accounts.values()) size += graph.identifierCount;
    return Promise.resolve({ driver: 'memory', ready: true, detail: `${size} identifier(s)` });
  }

  close(): Promise<void> {
    this.accounts.clear();
    return Promise.resolve();
  }
}

/** Whether resolving a record changed the graph (so its effects must reach the store). */
export function hasEffects(r: Resolution): boolean {
  // A born key given without links is a lowered age, which the store must receive too.
  return r.created || r.linked.length > 0 || r.born !== '' || r.merged.length > 0 || r.conflicts.length > 0;
}
