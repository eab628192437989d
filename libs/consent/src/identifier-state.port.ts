import type { DriverHealth } from '@cdp/contracts';

export type MetadataValue = string | number | boolean;

/** One identifier value's state: each part as its latest change left it. */
export interface IdentifierStatus {
  /** Counts the changes of this identifier: the order a rebuild replays them in. */
  version: number;
  consent?: { consent: boolean; reason: string | null; ts: number };
  reachability?: { reachable: boolean; update_type: string | null; reason: string | null; ts: number };
  metadata?: { fields: Record<string, MetadataValue>; ts: number };
  /**
   * When each part was last written, in acceptance order (`IdentifierChange.at`): `consent`,
   * `reachability`, `metadata` (its ts) and `metadata.<name>` per metadata field. Only changes that
   * carried an `at` leave one.
   */
  times?: Record<string, number>;
}

/** One change of one identifier's state (the bus record without its event). */
export type IdentifierChange = {
  field: string;
  value: string;
  ts: number;
  /**
   * The change's place in the order the bus accepted it (the same for a redelivery). Given, each part it
   * writes is written only if no change accepted later wrote it already: a change redelivered after a
   * crash, or applied late by another processor, never overwrites a newer one.
   */
  at?: number;
} & (
  | { type: 'consent'; consent: boolean; reason: string | null }
  | { type: 'reachability'; reachable: boolean; update_type: string | null; reason: string | null }
  | { type: 'metadata'; metadata: Record<string, MetadataValue | null> }
);

/** A stored change, as the store gives it back to rebuild the state: in `version` order per identifier. */
export interface StoredIdentifierChange {
  field: string;
  value: string;
  version: number;
  /** The change without field and value, as JSON. */
  change: string;
}

/**
 * What a change does to an identifier's state: the one rule every driver and every rebuild follows.
 * Every change counts a version; each part it writes is last-writer-wins by `at` (`newer`).
 */
export function applyIdentifierChange(status: IdentifierStatus, change: IdentifierChange): IdentifierStatus {
  const next: IdentifierStatus = { ...status, version: status.version + 1 };
  const times = { ...status.times };
  const { at } = change;
  /** Whether the change may write this part; if so, the part's time is the change's. */
  const newer = (part: string): boolean => {
    if (at === undefined) return true;
    if (times[part]! > at) return false;
    times[part] = at;
    return true;
  };
  switch (change.type) {
    case 'consent':
      if (newer('consent')) next.consent = { consent: change.consent, reason: change.reason, ts: change.ts };
      break;
    case 'reachability':
      if (newer('reachability'))
        next.reachability = {
          reachable: change.reachable,
          update_type: change.update_type,
          reason: change.reason,
          ts: change.ts,
        };
      break;
    case 'metadata': {
      const fields = { ...status.metadata?.fields };
      for (const [name, value] of Object.entries(change.metadata)) {
        if (!newer(`metadata.${name}`)) continue;
        if (value === null) delete fields[name];
        else fields[name] = value;
      }
      const ts = newer('metadata') ? change.ts : status.metadata!.ts;
      next.metadata = { fields, ts };
      break;
    }
  }
  if (at !== undefined) next.times = times;
  return next;
}

/** The change of a stored row, without the identifier (what the store keeps as JSON). */
export function changeBody(change: IdentifierChange): string {
  const body: Partial<IdentifierChange> = { ...change };
  delete body.field;
  delete body.value;
  return JSON.stringify(body);
}

export function changeOfRow(row: StoredIdentifierChange): IdentifierChange {
  return { ...(JSON.parse(row.change) as object), field: row.field, value: row.value } as IdentifierChange;
}

/**
 * The hot state of identifier values (consent of messaging identifiers other than email, reachability,
 * metadata): what `GET /v3/consent|reachability|identifiers/{field}` read. Rebuilt from the store's
 * `identifier_updates` (`load`). Email consent is not only here: the profile's `opted_in` is its truth.
 */
export abstract class IdentifierState {
  /** Applies changes in order, atomically; returns each identifier's version after its change. */
  abstract apply(account: string, changes: IdentifierChange[]): Promise<number[]>;
  abstract get(account: string, field: string, value: string): Promise<IdentifierStatus | undefined>;
  /** Replaces what the state holds of an account by replaying the stored changes. */
  abstract load(account: string, changes: AsyncIterable<StoredIdentifierChange>): Promise<number>;
  abstract health(): Promise<DriverHealth>;
  abstract close(): Promise<void>;
}

/** Folds stored changes (sorted by identifier, then version) into each identifier's state. */
export async function* replayIdentifierChanges(
  rows: AsyncIterable<StoredIdentifierChange>,
): AsyncIterable<{ field: string; value: string; status: IdentifierStatus }> {
  let current: { field: string; value: string; status: IdentifierStatus } | undefined;
  for await (const row of rows) {
    if (current && (current.field !== row.field || current.value !== row.value)) {
      yield current;
      current = undefined;
    }
    current ??= { field: row.field, value: row.value, status: { version: 0 } };
    current.status = { ...applyIdentifierChange(current.status, changeOfRow(row)), version: row.version };
  }
  if (current) yield current;
}
