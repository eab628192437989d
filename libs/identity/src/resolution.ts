import { MAX_BATCH } from '@cdp/contracts';
import { customerIdFromSeed, type Identifier } from '@cdp/domain';

/**
 * The identity rules (spec "Identifiers", DESIGN "Identity"), written once against an abstract graph
 * so the memory driver runs them directly; the Redis driver's function (redis-functions.ts) is the
 * same algorithm in Lua, and both are checked against a reference model by a property test.
 *
 * For one record:
 * 1. Look up every identifier. The record's anchor is the owner of its customer_id when it has one,
 *    else the owner of its first known identifier (customer_id, email, then the rest by name).
 * 2. The customer_id the merged customer will carry: the record's own, else the anchor's, else that of
 *    the first known customer that has one.
 * 3. Every known customer whose customer_id is absent or equal to it joins the merge; a customer with
 *    a different customer_id never does (spec: such customers never merge) — a conflict, recorded.
 * 4. At most MAX_MERGE customers join one merge: the anchor and the oldest others. The rest stay apart,
 *    recorded as conflicts with reason `merge_limit`: a record that touches that many customers is far
 *    more likely a shared junk value (a device id on a shop counter) than one person.
 * 5. The oldest joined customer survives (born earliest); the others are merged into it: their
 *    identifiers, and those of customers merged into them before, now resolve to the survivor.
 *    With nobody to join, a new customer is created, its id derived from the record's seed.
 *    A customer's born key is the least of its records' (bornKey: their place in acceptance order):
 *    a record accepted before the one that created it, processed after, lowers it. So which customer
 *    is older, and survives, does not depend on the order processors took the records in.
 * 6. Identifiers nobody owned are linked to the survivor; those of conflicting customers stay theirs.
 *
 * Low-confidence identifiers (custom identifiers created with `merge_confidence: low`) take part only
 * when the record's other identifiers know nobody: then the owner of the first of them is the record's
 * customer, as if it were known by a high one. Otherwise their owners are left alone (no merge, no
 * conflict: a shared low value is expected, not a contradiction). Either way an unowned one is linked.
 */
export const MAX_MERGE = 10;

export interface ResolveInput {
  /** The record's identifiers, normalized, in resolution order (see `identifierList`). */
  ids: Identifier[];
  /** Derives the id of a customer this record creates (customerIdFromSeed), so replays agree. */
  seed: string;
  /**
   * The record's born key (bornKey: its place in acceptance order): the key of a customer it creates,
   * and the key it lowers an existing customer's to when it was accepted earlier than that customer's
   * records. Customers compare by age through it.
   */
  born: string;
  /** The bus message the record came in, and its index there: effects are remembered per message. */
  message: string;
  index: number;
  /** Positions in `ids` of low-confidence identifiers (never customer_id); absent when there are none. */
  low?: number[];
}

export type ConflictReason = 'customer_id' | 'merge_limit';

export interface Resolution {
  customerId: string;
  /**
   * The customer's born key after this record (see ResolveInput.born) when the record linked
   * identifiers (their store rows carry it) or lowered it (a row of its own keeps that for a rebuild);
   * '' otherwise.
   */
  born: string;
  /** True when this record created the customer. */
  created: boolean;
  /** Identifiers this record linked to the customer (nobody owned them before). */
  linked: Identifier[];
  /** Customers merged into `customerId` by this record, including those merged into them earlier. */
  merged: string[];
  /** The account's merge counter when this record merged (0 if it did not): orders merges for the store. */
  mergeSeq: number;
  /** Customers this record touched but could not merge, and why. */
  conflicts: { customerId: string; reason: ConflictReason }[];
}

/**
 * What the rules need of an index: lookups, and the three changes they make. `C` is how the index
 * names a customer inside (its id, or a number in a compact index); `idOf` gives the id outside.
 */
export interface IdentityGraph<C = string> {
  owner(id: Identifier): C | undefined;
  customerIdOf(customer: C): string | undefined;
  bornOf(customer: C): string;
  idOf(customer: C): string;
  /** Creates the customer with this id (an index that already holds it only takes the new born key). */
  create(customerId: string, born: string): C;
  /** Gives an existing customer a lower born key (a record accepted before its others resolved to it). */
  lowerBorn(customer: C, born: string): void;
  link(id: Identifier, customer: C): void;
  /** Points the loser, its identifiers and everyone merged into it at the survivor; returns their ids. */
  merge(loser: C, survivor: C): string[];
  /** Advances and returns the account's merge counter. */
  nextMergeSeq(): number;
}

export function resolveRecord<C>(graph: IdentityGraph<C>, input: ResolveInput): Resolution {
  // Written as loops over plain arrays, with the lists most records leave empty shared (NONE): this runs
  // for every record, and what it allocates outlives the young generation while the batch is written.
  const { ids, low } = input;
  const owners: (C | undefined)[] = [];
  let own = -1;
  for (let i = 0; i < ids.length; i++) {
    owners.push(graph.owner(ids[i]!));
    if (own < 0 && ids[i]!.kind === 'customer_id') own = i;
  }
  const recordCid = own >= 0 ? ids[own]!.value : undefined;

  const known: C[] = [];
  for (let i = 0; i < owners.length; i++) {
    const o = owners[i];
    if (o !== undefined && !low?.includes(i) && !known.includes(o)) known.push(o);
  }
  if (known.length === 0 && low)
    for (let i = 0; i < owners.length; i++)
      if (owners[i] !== undefined && low.includes(i)) {
        known.push(owners[i]!);
        break;
      }
  const anchor = recordCid !== undefined ? owners[own] : known[0];
  let cid = recordCid ?? (anchor !== undefined ? graph.customerIdOf(anchor) : undefined);
  for (let i = 0; cid === undefined && i < known.length; i++) cid = graph.customerIdOf(known[i]!);

  let conflicts: Resolution['conflicts'] = NONE;
  let joined: C[] = [];
  for (const c of known) {
    const other = graph.customerIdOf(c);
    if (other === undefined || other === cid) joined.push(c);
    else conflicts = withItem(conflicts, { customerId: graph.idOf(c), reason: 'customer_id' });
  }
  if (joined.length > MAX_MERGE) {
    const others = joined.filter((c) => c !== anchor).sort((a, b) => byAge(graph, a, b));
    const kept =
      anchor !== undefined ? [anchor, ...others.slice(0, MAX_MERGE - 1)] : others.slice(0, MAX_MERGE);
    for (const c of joined)
      if (!kept.includes(c))
        conflicts = withItem(conflicts, { customerId: graph.idOf(c), reason: 'merge_limit' });
    joined = kept;
  }

  let customer: C;
  let customerId: string;
  let merged: string[] = NONE;
  let mergeSeq = 0;
  const created = joined.length === 0;
  if (created) {
    customerId = customerIdFromSeed(input.seed);
    customer = graph.create(customerId, input.born);
  } else {
    if (joined.length > 1) joined.sort((a, b) => byAge(graph, a, b));
    customer = joined[0]!;
    customerId = graph.idOf(customer);
    if (joined.length > 1) {
      mergeSeq = graph.nextMergeSeq();
      merged = [];
      for (const loser of joined.slice(1)) merged.push(...graph.merge(loser, customer));
    }
  }

  // A record accepted before every other of its customer, processed after them, makes it older: its
  // age is then what one processor taking the records in acceptance order would have given it.
  const lowered = !created && input.born < graph.bornOf(customer);
  if (lowered) graph.lowerBorn(customer, input.born);

  let linked: Identifier[] = NONE;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (owners[i] !== undefined || graph.owner(id) !== undefined) continue;
    graph.link(id, customer);
    linked = withItem(linked, id);
  }
  return {
    customerId,
    born: linked.length || lowered ? graph.bornOf(customer) : '',
    created,
    linked,
    merged,
    mergeSeq,
    conflicts,
  };
}

/**
 * The empty list of every resolution with nothing linked, merged or in conflict: shared, so frozen
 * (whoever would add to a resolution's list copies it).
 */
const NONE = Object.freeze([]) as unknown as never[];

/** The list with `item` added: a list of its own in place of the shared NONE. */
function withItem<T>(list: T[], item: T): T[] {
  const own = list === NONE ? [] : list;
  own.push(item);
  return own;
}

function byAge<C>(graph: IdentityGraph<C>, a: C, b: C): number {
  const x = graph.bornOf(a);
  const y = graph.bornOf(b);
  if (x !== y) return x < y ? -1 : 1;
  const i = graph.idOf(a);
  const j = graph.idOf(b);
  return i < j ? -1 : i > j ? 1 : 0;
}

/**
 * A record's born key: its place in the bus's acceptance order (`acceptanceOrder`: the message's bus
 * sequence × MAX_BATCH + the record's index), written `a<sequence, 13 digits>:<index, 3 digits>` so keys
 * sort as text in that order (and a message's records share the part before ':', which the memory index
 * interns once). The sequence, not a clock: API replicas stamp receive times with their own clocks, the
 * bus numbers every message it accepts in one order. Keys of customers created before this rule (the
 * receive time in ms, 15 digits, then message and index) begin with a digit, so they sort before every
 * `a…` key: those customers stay older than any created since, as they were.
 */
export function bornKey(at: number): string {
  const sequence = Math.floor(at / MAX_BATCH);
  const index = at % MAX_BATCH;
  return `a${sequence.toString().padStart(13, '0')}:${index.toString().padStart(3, '0')}`;
}
