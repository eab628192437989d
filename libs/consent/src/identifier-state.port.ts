import type { DriverHealth } from '@cdp/contracts';

export type MetadataValue = string | number | boolean;

/** One identifier value's state: each part as its latest change left it. */
export interface IdentifierStatus {
  /** Counts the changes of this identifier: the order a rebuild replays them in. */
  version: number;
  consent?: { consent: boolean; reason: string | null; ts: number };
  reachability?: { reachable: boolean; update_type: string | null; reason: string | null; ts: number };
  metadata?: { fields: Record<string, MetadataValue>; ts: number };
}

/** One change of one identifier's state (the bus record without its event). */
export type IdentifierChange = { field: string; value: string; ts: number } & (
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

/** What a change does to an identifier's state: the one rule every driver and every rebuild follows. */
export function applyIdentifierChange(status: IdentifierStatus, change: IdentifierChange): IdentifierStatus {
  const next: IdentifierStatus = { ...status, version: status.version + 1 };
  switch (change.type) {
    case 'consent':
      next.consent = { consent: change.consent, reason: change.reason, ts: change.ts };
      break;
    case 'reachability':
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
        if (value === null) delete fields[name];
        else fields[name] = value;
      }
      next.metadata = { fields, ts: change.ts };
      break;
    }
  }
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
