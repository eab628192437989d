import { DETERMINISTIC_STORE_CODES, StoreError } from '@cdp/store';
import type { Delivery } from './event-bus.port.js';

/**
 * The step contract (PostHog's ingestion pipeline results are the model). Every processor step has one
 * signature, `run(input): Promise<StepResult<Output>>`, and says what became of its input:
 *
 * - `ok(value)`: done; the value is the step's work (the rows to write, what it resolved). The runner
 *   (IngestPipeline) collects the values and writes them; a step never writes into a batch it did not build.
 * - `drop(reason)`: nothing to store and nothing to retry; the message is acknowledged and counted in
 *   `cdp_records_dropped_total{reason}` (so the reason is a fixed word, e.g. `duplicate`, never data).
 * - `deadLetter(reason)`: will fail the same way on every attempt; dead-lettered at once.
 * - `retry(reason)`: may work later; retried with backoff (only the message waits, nothing behind it).
 *
 * A step never acks, naks or dead-letters anything itself: BusTransport turns the results into
 * settlements and metrics. A step may also throw; the error becomes a result through `failureOf`.
 */
export type StepResult<T> = StepOk<T> | StepDrop | StepFailure;
export type StepFailure = StepDeadLetter | StepRetry;

export interface StepOk<T> {
  readonly type: 'ok';
  readonly value: T;
}
export interface StepDrop {
  readonly type: 'drop';
  readonly reason: string;
}
export interface StepDeadLetter {
  readonly type: 'dead-letter';
  readonly reason: string;
}
export interface StepRetry {
  readonly type: 'retry';
  readonly reason: string;
}

/** A processor step: its input in, a result out (see StepResult). */
export interface Step<I, O> {
  run(input: I): Promise<StepResult<O>>;
}

export function ok(): StepOk<undefined>;
export function ok<T>(value: T): StepOk<T>;
export function ok<T>(value?: T): StepOk<T | undefined> {
  return { type: 'ok', value };
}
export const drop = (reason: string): StepDrop => ({ type: 'drop', reason });
export const deadLetter = (reason: string): StepDeadLetter => ({ type: 'dead-letter', reason });
export const retry = (reason: string): StepRetry => ({ type: 'retry', reason });

/** The drop reason of a second copy of a message in one batch (the processor stored the first). */
export const DUPLICATE = 'duplicate';

export function isFailure(result: StepResult<unknown>): result is StepFailure {
  return result.type === 'dead-letter' || result.type === 'retry';
}

/** What the processor's handler gives back for each delivery of a batch. */
export interface DeliveryResult {
  readonly delivery: Delivery;
  readonly result: StepResult<unknown>;
}

/**
 * The result of a failure (the rule, also in README "Dead letters"): dead-lettered at once when it
 * will recur on every attempt — a StoreError whose engine code is one of DETERMINISTIC_STORE_CODES (the
 * rows are wrong for their columns), or an error that says `deterministic: true` of itself (a rejected
 * record) — checked through the error's causes; any other failure is transient and retried.
 */
export function failureOf(err: unknown): StepFailure {
  for (let e = err, depth = 0; e && depth < 8; depth++) {
    if (e instanceof StoreError) {
      const name = e.code === undefined ? undefined : DETERMINISTIC_STORE_CODES.get(e.code);
      if (name) return deadLetter(`${describe(err)} [${name}]`);
    } else if ((e as { deterministic?: unknown }).deterministic === true) {
      return deadLetter(describe(err));
    }
    e = (e as { cause?: unknown }).cause;
  }
  return retry(describe(err));
}

/** An error as a dead letter's or a log line's reason: its name, its engine code if any, its message. */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return `${err.name}${typeof code === 'number' ? ` (code ${code})` : ''}: ${err.message}`;
}
