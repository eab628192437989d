import { Injectable, Optional } from '@nestjs/common';
import {
  customerIdSeed,
  identifierList,
  identityKey,
  isIdentifierField,
  type CustomIdentifierNames,
  type Identifier,
} from '@cdp/domain';
import {
  bornKey,
  IdentityIndex,
  IdentityNotWarmError,
  ProfileState,
  type ProfileSnapshot,
  type ProfileUpdate,
  type Resolution,
  type ResolveInput,
} from '@cdp/identity';
import { Inspector } from '@cdp/inspector';
import { Metrics } from '@cdp/metrics';
import { FAULT_POINTS, faultPoint } from '@cdp/faults';
import { ok, retry, type Step, type StepResult } from '@cdp/bus';
import { SchemaRegistry } from '@cdp/schema';
import type { ConflictRow, CustomerRow, IdentityLinkRow, MergeRow } from '@cdp/store';
import { IdentityRebuild } from './identity-rebuild.service.js';

/** A batch resolved: each record's resolution and identifiers, and which of those are opted out. */
export interface ResolvedBatch {
  resolutions: Resolution[];
  identifiers: Identifier[][];
  /** Identity keys (identityKey) of the batch's identifiers that are in the opt-out pool. */
  pooled: ReadonlySet<string>;
}

export interface IdentityInput {
  account: string;
  items: readonly IdentifiedItem[];
  /** Settles once the earlier batches' writes are done (or failed): a rebuild waits for them. */
  writesBefore?: Promise<unknown>;
}

/** A record's identity effects as store rows: the links it made, the merges and conflicts it caused. */
export interface IdentityRows {
  identityLinks: IdentityLinkRow[];
  merges: MergeRow[];
  conflicts: ConflictRow[];
}

/** A record that identifies a customer, with the message it came in and its place in acceptance order. */
export interface IdentifiedItem {
  message: { id: string; receivedAt: number };
  index: number;
  /** acceptanceOrder(delivery, index): a customer's age is the least of its records' (bornKey). */
  at: number;
  record: { identifiers: Record<string, string | string[]> };
}

/**
 * What every processor step that identifies customers shares: resolve a batch in one index call
 * (`run`, rebuilding a cold index from the store first), turn the identity effects into store rows
 * (links, merges with their cause, conflicts), fold merged profiles into their survivors, and settle
 * the messages once the store holds their rows.
 */
@Injectable()
export class IdentityStep implements Step<IdentityInput, ResolvedBatch> {
  constructor(
    private readonly identity: IdentityIndex,
    private readonly profiles: ProfileState,
    private readonly rebuild: IdentityRebuild,
    @Optional() private readonly metrics?: Metrics,
    @Optional() private readonly inspector?: Inspector,
    /** The account's custom identifiers' merge confidence; without it every identifier merges. */
    @Optional() private readonly schema?: SchemaRegistry,
  ) {}

  /**
   * Resolves a batch, and looks up its identifiers in the opt-out pool at the same time (the two are
   * independent; a rebuild, which reloads the pool too, repeats both).
   */
  async run({
    account,
    items,
    writesBefore = Promise.resolve(),
  }: IdentityInput): Promise<StepResult<ResolvedBatch>> {
    if (!this.metrics || items.length === 0) {
      const resolved = await this.resolveBatch(account, items, writesBefore);
      if (resolved.type === 'ok') this.inspect(account, items, resolved.value.resolutions);
      return resolved;
    }
    const stop = this.metrics.identityResolveDuration.startTimer();
    const resolved = await this.resolveBatch(account, items, writesBefore);
    if (resolved.type === 'ok') {
      countResolved(this.metrics, resolved.value.resolutions, stop);
      this.inspect(account, items, resolved.value.resolutions);
    }
    return resolved;
  }

  /** The event inspector, when a console is open for the account: the customer each record resolved to. */
  private inspect(account: string, items: readonly IdentifiedItem[], resolutions: Resolution[]): void {
    if (!this.inspector) return;
    const at = new Date().toISOString();
    this.inspector.offer(
      account,
      items.length,
      (i) => ({
        type: 'resolution',
        at,
        request_id: items[i]!.message.id,
        index: items[i]!.index,
        customer_id: resolutions[i]!.customerId,
        created: resolutions[i]!.created,
        merged: resolutions[i]!.merged,
      }),
      (i) => ({ requestId: items[i]!.message.id, index: items[i]!.index }),
    );
  }

  private async resolveBatch(
    account: string,
    items: readonly IdentifiedItem[],
    writesBefore: Promise<unknown>,
  ): Promise<StepResult<ResolvedBatch>> {
    if (items.length === 0) return ok({ resolutions: [], identifiers: [], pooled: new Set<string>() });
    const identifiers = items.map(({ record }) => identifierList(record.identifiers));
    const lowKinds = await this.lowConfidence(account, identifiers);
    const records = items.map(({ message, index, at }, i): ResolveInput => {
      const record: ResolveInput = {
        ids: identifiers[i]!,
        seed: customerIdSeed(message.id, index),
        born: bornKey(at),
        message: message.id,
        index,
      };
      // Only a batch with a custom identifier reads low kinds; a record without one gets no list.
      const low = lowKinds.size ? positionsOf(identifiers[i]!, lowKinds) : undefined;
      if (low?.length) record.low = low;
      return record;
    });
    const lookUp = async (): Promise<ResolvedBatch> => {
      const [resolutions, pooled] = await Promise.all([
        this.identity.resolve(account, records),
        this.profiles.inOptOutPool(account, identifiers.flat()),
      ]);
      return { resolutions, identifiers, pooled: new Set(pooled.map(identityKey)) };
    };
    try {
      return ok(await lookUp());
    } catch (err) {
      if (!(err instanceof IdentityNotWarmError)) throw err;
      // Redis lost the account (flushed, restarted) while batches resolved before it were still being
      // written: the rebuild reads the store, so their rows must be in it first, or their customers
      // would be missing from the rebuilt index (and created again by their next records).
      await writesBefore.catch(() => undefined);
      if (!(await this.rebuild.rebuild(account)))
        return retry('the identity index of the account is being rebuilt by another processor');
      return ok(await lookUp());
    }
  }

  /**
   * The account's low-confidence identifier kinds, read only when the batch carries a custom identifier.
   * The API lets one through only once the schema defines it, so a kind this process does not know yet
   * is looked up in a fresh read (a definition never changes afterwards: redeliveries resolve alike).
   */
  private async lowConfidence(account: string, identifiers: Identifier[][]): Promise<CustomIdentifierNames> {
    if (!this.schema) return NONE;
    const custom = new Set<string>();
    for (const ids of identifiers) for (const id of ids) if (!isIdentifierField(id.kind)) custom.add(id.kind);
    if (custom.size === 0) return NONE;
    let schema = await this.schema.read(account);
    if ([...custom].some((k) => !schema.identifierNames.has(k)))
      schema = await this.schema.read(account, true);
    return schema.lowConfidenceIdentifiers;
  }

  /**
   * Appends a record's identity effects to the batch's rows: links, merges and conflicts, with their
   * cause. Into the batch, not a new set of lists: it runs for every record, and most records link
   * nothing new.
   */
  addEffectRows(item: IdentifiedItem, resolution: Resolution, now: string, into: IdentityRows): void {
    const { customerId, born, linked, merged, mergeSeq, conflicts } = resolution;
    const msg_id = item.message.id;
    for (const id of linked) {
      into.identityLinks.push({
        kind: id.kind,
        value: id.value,
        svc_id: customerId,
        born,
        msg_id,
        created_at: now,
      });
    }
    // A born key lowered with no link to carry it (the record was accepted before the customer's
    // others, processed after them): a row of its own, so a rebuild gives the customer the same age.
    if (born !== '' && linked.length === 0)
      into.identityLinks.push({ kind: '', value: '', svc_id: customerId, born, msg_id, created_at: now });
    if (merged.length === 0 && conflicts.length === 0) return;
    const cause = identifierList(item.record.identifiers).map((id: Identifier) => `${id.kind}:${id.value}`);
    for (const loser of merged) {
      into.merges.push({ loser, survivor: customerId, seq: mergeSeq, cause, msg_id, created_at: now });
    }
    for (const c of conflicts) {
      into.conflicts.push({
        svc_id: customerId,
        other_svc_id: c.customerId,
        reason: c.reason,
        cause,
        msg_id,
        created_at: now,
      });
    }
  }

  /**
   * Applies profile updates (merged profiles folded into their survivors) and returns the snapshot
   * rows; `messageOf` names the message behind each customer's last change.
   */
  async applyProfiles(
    account: string,
    updates: ProfileUpdate[],
    messageOf: (customerId: string) => string,
    now: string,
  ): Promise<CustomerRow[]> {
    faultPoint(FAULT_POINTS.profilesApply);
    let applied: ProfileSnapshot[];
    try {
      applied = await this.profiles.apply(account, updates);
    } catch (err) {
      // The index holds the account but its profiles are not loaded (a shard that lost them, or an
      // upgrade that moved them): closed, the redelivered batch is resolved again after a rebuild.
      if (err instanceof IdentityNotWarmError) await this.identity.closeAccount(account);
      throw err;
    }
    return applied.map((snapshot) => ({
      svc_id: snapshot.customerId,
      version: snapshot.version,
      msg_id: messageOf(snapshot.customerId),
      updated_at: now,
      merged_into: snapshot.mergedInto ?? null,
      ...(snapshot.redacted ? { redacted: true } : {}),
      ...(snapshot.times ? { field_at: JSON.stringify(snapshot.times) } : {}),
      attributes: snapshot.attributes,
    }));
  }

  /**
   * Marks for redaction the profile of every record carrying an identifier of the opt-out pool (spec
   * "Compliance opt-out"): a customer such an identifier creates or reaches is born, or stays, redacted.
   */
  redactOptedOut(
    items: readonly IdentifiedItem[],
    { resolutions, identifiers, pooled }: ResolvedBatch,
    updates: ProfileUpdate[],
    lastMessageOf: Map<string, string>,
  ): void {
    if (pooled.size === 0) return;
    // A customer merged later in the batch lives on in its survivor.
    const survivorOf = new Map<string, string>();
    for (const r of resolutions) for (const loser of r.merged) survivorOf.set(loser, r.customerId);
    const final = (c: string): string => {
      for (let hops = 0; survivorOf.has(c) && hops < 100; hops++) c = survivorOf.get(c)!;
      return c;
    };
    const customers = new Map<string, string>();
    items.forEach((item, i) => {
      if (identifiers[i]!.some((id) => pooled.has(identityKey(id))))
        customers.set(final(resolutions[i]!.customerId), item.message.id);
    });
    for (const u of updates) if (customers.has(u.customerId)) u.redact = true;
    // A customer whose record changed nothing on the profile gets its redaction all the same.
    for (const [c, message] of customers)
      if (!updates.some((u) => u.customerId === c)) {
        updates.push({ customerId: c, update: {}, redact: true });
        lastMessageOf.set(c, message);
      }
  }

  /** Those of these customers a compliance opt-out redacted (their hot profile says so). */
  async redactedAmong(account: string, customers: Iterable<string>): Promise<string[]> {
    // Read together, not one round trip after another: a batch of orders may name many owners.
    const unique = [...new Set(customers)];
    const profiles = await Promise.all(unique.map((c) => this.profiles.get(account, c)));
    return unique.filter((_, i) => profiles[i]?.redacted);
  }

  /** Forgets what the index remembered of these messages: the store holds their rows now. */
  settle(account: string, messages: readonly { id: string }[]): Promise<void> {
    faultPoint(FAULT_POINTS.identitySettle);
    return this.identity.settle(account, [...new Set(messages.map((m) => m.id))]);
  }
}

const NONE: CustomIdentifierNames = new Set();

/** Where in a record's identifiers the kinds named are. */
function positionsOf(ids: readonly Identifier[], kinds: CustomIdentifierNames): number[] {
  const out: number[] = [];
  ids.forEach((id, i) => {
    if (kinds.has(id.kind)) out.push(i);
  });
  return out;
}

/**
 * A record's profile update, written by its place in acceptance order (`at`), that also folds in the
 * customers the record merged.
 */
export function withMerges(
  customerId: string,
  update: ProfileUpdate['update'],
  merged: string[],
  at: number,
): ProfileUpdate {
  return merged.length ? { customerId, update, absorb: merged, at } : { customerId, update, at };
}

/** One batch's resolve time and identity effects, counted once per batch. */
function countResolved(metrics: Metrics, resolutions: readonly Resolution[], stop: () => number): void {
  stop();
  let merges = 0;
  let conflicts = 0;
  for (const r of resolutions) {
    merges += r.merged.length;
    conflicts += r.conflicts.length;
  }
  metrics.identityResolvedRecords.inc(resolutions.length);
  if (merges) metrics.identityMerges.inc(merges);
  if (conflicts) metrics.identityConflicts.inc(conflicts);
}
