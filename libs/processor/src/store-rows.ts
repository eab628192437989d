import { type StepDrop, type StepFailure, type StepResult } from '@cdp/bus';
import type { StoreBatch } from '@cdp/store';

/** Rows a step returns for the runner to write: any of the store batch's tables. */
export type StoreRows = Partial<StoreBatch>;

/** The runner's batch for one account, before any step added to it. */
export function emptyBatch(): StoreBatch {
  return { identityLinks: [], merges: [], conflicts: [], customers: [], events: [] };
}

/** Appends a step's rows to the runner's batch, table by table, keeping their order. */
export function collectRows(into: StoreBatch, rows: StoreRows): StoreBatch {
  for (const [table, list] of Object.entries(rows) as [keyof StoreBatch, unknown[] | undefined][]) {
    if (!list) continue;
    const target = (into[table] ??= []) as unknown[];
    for (const row of list) target.push(row);
  }
  return into;
}

/**
 * A step's result that is not ok, carried through the runner's batch stages (which settle on a
 * promise) to the edge of the pipeline, where it becomes the result of the batch's deliveries again.
 */
export class StepFailed extends Error {
  override name = 'StepFailed';
  constructor(readonly result: StepFailure | StepDrop) {
    super(`${result.type}: ${result.reason}`);
  }
}

/** The value of an ok result; any other stops the batch (StepFailed). */
export function unwrap<T>(result: StepResult<T>): T {
  if (result.type === 'ok') return result.value;
  throw new StepFailed(result);
}
