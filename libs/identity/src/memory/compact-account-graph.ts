import type { Identifier } from '@cdp/domain';
import type { IdentityGraphRows } from '../identity-index.port.js';
import type { IdentityGraph } from '../resolution.js';
import { InternedStrings, grown, resized } from './interned-strings.js';

/**
 * One account's identity graph in typed arrays: the memory driver's index. Customers and identifiers
 * are numbers (their order of arrival); their texts are interned once (InternedStrings), and every
 * relation is a column indexed by those numbers. About 190 bytes a customer with an email and a vuid,
 * where the same graph in maps of strings (AccountGraph) takes ~740.
 *
 * Columns hold a number + 1, so that 0 (what a new column is filled with) means "none".
 * - identifier → its customer (`owner`, always a survivor: merges re-point eagerly) and the next
 *   identifier of the same customer (`nextMember`): each customer's identifiers are a chain.
 * - customer → the head of its identifier chain, its customer_id identifier, its born key (two
 *   interned parts: up to the last ':', shared by a message's records, and the rest), the survivor
 *   it was merged into (`survivor`: kept current, so one read answers), and the chain of customers
 *   merged into it (`absorbedHead`, `nextAbsorbed`).
 */
export class CompactAccountGraph implements IdentityGraph<number> {
  private readonly identifiers = new InternedStrings();
  private readonly customers = new InternedStrings();
  /** Born keys cut in two: the message part (one per message) and the record part (a few thousand). */
  private readonly bornParts = new InternedStrings();
  /** Identifier kinds (a handful an account) → a small number, the identifiers' interned kind. */
  private readonly kinds = new Map<string, number>();
  private readonly kindNames: string[] = [];

  private owner1 = new Int32Array(8);
  private nextMember1 = new Int32Array(8);

  private memberHead1 = new Int32Array(8);
  private customerId1 = new Int32Array(8);
  private bornHead1 = new Int32Array(8);
  private bornTail1 = new Int32Array(8);
  private survivor1 = new Int32Array(8);
  private absorbedHead1 = new Int32Array(8);
  private nextAbsorbed1 = new Int32Array(8);

  mergeSeq = 0;

  /** How many identifiers the graph holds. */
  get identifierCount(): number {
    return this.identifiers.size;
  }

  /** How many customers it knows (merged ones included). */
  get customerCount(): number {
    return this.customers.size;
  }

  /** Bytes held by its arrays and arenas (slack included): what the account costs, without the heap's own overhead. */
  get bytes(): number {
    const columns = [
      this.owner1,
      this.nextMember1,
      this.memberHead1,
      this.customerId1,
      this.bornHead1,
      this.bornTail1,
      this.survivor1,
      this.absorbedHead1,
      this.nextAbsorbed1,
    ];
    return (
      this.identifiers.bytes +
      this.customers.bytes +
      this.bornParts.bytes +
      columns.reduce((sum, c) => sum + c.byteLength, 0)
    );
  }

  nextMergeSeq(): number {
    return ++this.mergeSeq;
  }

  /** The identifier's number, or -1. */
  private identifierOf(id: Identifier): number {
    const kind = this.kinds.get(id.kind);
    return kind === undefined ? -1 : this.identifiers.find(kind, id.value);
  }

  owner(id: Identifier): number | undefined {
    const i = this.identifierOf(id);
    return i < 0 ? undefined : this.owner1[i]! - 1;
  }

  /** The customer's number, or undefined when the graph never met it. */
  customer(customerId: string): number | undefined {
    const c = this.customers.find(0, customerId);
    return c < 0 ? undefined : c;
  }

  idOf(customer: number): string {
    return this.customers.text(customer);
  }

  customerIdOf(customer: number): string | undefined {
    const i = this.customerId1[customer]! - 1;
    return i < 0 ? undefined : this.identifiers.text(i);
  }

  bornOf(customer: number): string {
    const head = this.bornHead1[customer]! - 1;
    if (head < 0) return '';
    return this.bornParts.text(head) + this.bornParts.text(this.bornTail1[customer]! - 1);
  }

  create(customerId: string, born: string): number {
    const c = this.customers.intern(0, customerId);
    if (c === this.memberHead1.length) this.growCustomers();
    this.lowerBorn(c, born);
    return c;
  }

  lowerBorn(c: number, born: string): void {
    const cut = born.lastIndexOf(':') + 1;
    // Records of one message come one after another and share the message part.
    if (cut !== this.lastBornHead?.length || !born.startsWith(this.lastBornHead)) {
      this.lastBornHead = born.slice(0, cut);
      this.lastBornHeadKey = this.bornParts.intern(0, this.lastBornHead);
    }
    this.bornHead1[c] = this.lastBornHeadKey + 1;
    this.bornTail1[c] = this.bornParts.intern(0, born.slice(cut)) + 1;
  }

  private lastBornHead: string | undefined;
  private lastBornHeadKey = 0;

  /** The customer, met for the first time without a born key (a merge row naming it): sorts first, as '' does. */
  private known(customerId: string): number {
    const c = this.customers.intern(0, customerId);
    if (c === this.memberHead1.length) this.growCustomers();
    return c;
  }

  link(id: Identifier, customer: number): void {
    let kind = this.kinds.get(id.kind);
    if (kind === undefined) {
      kind = this.kindNames.push(id.kind) - 1;
      this.kinds.set(id.kind, kind);
    }
    const i = this.identifiers.add(kind, id.value);
    if (i === this.owner1.length) {
      const size = grown(i);
      this.owner1 = resized(this.owner1, size);
      this.nextMember1 = resized(this.nextMember1, size);
    }
    this.owner1[i] = customer + 1;
    this.nextMember1[i] = this.memberHead1[customer]!;
    this.memberHead1[customer] = i + 1;
    if (id.kind === 'customer_id' && this.customerId1[customer] === 0) this.customerId1[customer] = i + 1;
  }

  merge(loser: number, survivor: number): string[] {
    // The loser's identifiers now resolve to the survivor; its chain goes in front of the survivor's.
    let last = -1;
    for (let i = this.memberHead1[loser]! - 1; i >= 0; i = this.nextMember1[i]! - 1) {
      this.owner1[i] = survivor + 1;
      last = i;
    }
    if (last >= 0) {
      this.nextMember1[last] = this.memberHead1[survivor]!;
      this.memberHead1[survivor] = this.memberHead1[loser]!;
      this.memberHead1[loser] = 0;
    }
    if (this.customerId1[survivor] === 0) this.customerId1[survivor] = this.customerId1[loser]!;
    // The loser and everyone merged into it join the survivor's absorbed chain.
    const moved = [this.customers.text(loser)];
    this.survivor1[loser] = survivor + 1;
    let tail = loser;
    for (let c = this.absorbedHead1[loser]! - 1; c >= 0; c = this.nextAbsorbed1[c]! - 1) {
      this.survivor1[c] = survivor + 1;
      moved.push(this.customers.text(c));
      tail = c;
    }
    this.nextAbsorbed1[loser] = this.absorbedHead1[loser]!;
    this.absorbedHead1[loser] = 0;
    this.nextAbsorbed1[tail] = this.absorbedHead1[survivor]!;
    this.absorbedHead1[survivor] = loser + 1;
    return moved;
  }

  /** The customer a possibly merged customer's history belongs to now. */
  survivorOf(customer: number): number {
    const s = this.survivor1[customer]! - 1;
    return s < 0 ? customer : s;
  }

  /** The customers merged into a survivor (none for a merged customer: its survivor holds them). */
  absorbedBy(customer: number): string[] {
    const out: string[] = [];
    for (let c = this.absorbedHead1[customer]! - 1; c >= 0; c = this.nextAbsorbed1[c]! - 1)
      out.push(this.customers.text(c));
    return out;
  }

  /** A survivor's identifiers, its own first in the order they were linked, then those of customers merged into it. */
  identifiersOf(customer: number): Identifier[] {
    const out: Identifier[] = [];
    for (let i = this.memberHead1[customer]! - 1; i >= 0; i = this.nextMember1[i]! - 1)
      out.push({ kind: this.kindNames[this.identifiers.kind(i)]!, value: this.identifiers.text(i) });
    return out.reverse();
  }

  private growCustomers(): void {
    const size = grown(this.memberHead1.length);
    this.memberHead1 = resized(this.memberHead1, size);
    this.customerId1 = resized(this.customerId1, size);
    this.bornHead1 = resized(this.bornHead1, size);
    this.bornTail1 = resized(this.bornTail1, size);
    this.survivor1 = resized(this.survivor1, size);
    this.absorbedHead1 = resized(this.absorbedHead1, size);
    this.nextAbsorbed1 = resized(this.nextAbsorbed1, size);
  }

  /**
   * Rebuilds the graph from the store: each identifier to its first owner, each customer with the least
   * born key its rows carry, then the merges in order (what AccountGraph.fromRows does, into the compact
   * form).
   */
  static async fromRows(rows: IdentityGraphRows): Promise<CompactAccountGraph> {
    const graph = new CompactAccountGraph();
    for await (const link of rows.links) {
      const id = { kind: link.kind, value: link.value };
      // The store reads one row an identifier; were there two, the first owner keeps it.
      if (graph.owner(id) !== undefined) continue;
      let c = graph.customer(link.svc_id);
      if (c === undefined || graph.bornHead1[c] === 0) c = graph.create(link.svc_id, link.born);
      else if (link.born < graph.bornOf(c)) graph.lowerBorn(c, link.born);
      graph.link(id, c);
    }
    for await (const { svc_id, born } of rows.borns) {
      const c = graph.customer(svc_id);
      if (c !== undefined && graph.bornHead1[c] !== 0 && born < graph.bornOf(c)) graph.lowerBorn(c, born);
    }
    for await (const { loser, survivor, seq } of rows.merges) {
      graph.mergeSeq = Math.max(graph.mergeSeq, seq);
      const from = graph.survivorOf(graph.known(loser));
      const to = graph.survivorOf(graph.known(survivor));
      if (from !== to) graph.merge(from, to);
    }
    return graph;
  }
}
