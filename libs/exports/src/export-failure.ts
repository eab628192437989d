import { ApiError } from '@cdp/contracts';
import type { ExportFormat } from './export-request.js';

/** The steps of exporting one object, each failing with a reason a user can act on. */
export type ExportStep = 'read' | 'write' | 'place';

/**
 * A step's failure. Its cause (the engine's message, with SQL and database names) goes to the log;
 * the record and complete.json get only the step's reason (`failureReason`).
 */
export class ExportStepError extends Error {
  override name = 'ExportStepError';
  constructor(
    readonly step: ExportStep,
    cause: unknown,
  ) {
    super(`export step "${step}" failed`, { cause });
  }
}

/** Runs one step, so that what fails inside it is told as that step's failure. */
export async function inStep<T>(step: ExportStep, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof ExportStepError ? err : new ExportStepError(step, err);
  }
}

/**
 * The one place an export's failure becomes the reason a user reads (the record's `errors`,
 * complete.json's): which object, and what went wrong, never an engine's text. An API error (a
 * select naming what the schema does not have) is already written for the user.
 */
export function failureReason(object: string, format: ExportFormat, err: unknown): string {
  if (err instanceof ApiError) return `could not export ${object}: ${err.message}`;
  const what =
    err instanceof ExportStepError
      ? {
          read: 'its records could not be read from the store',
          write: `its ${format} file could not be written`,
          place: 'its files could not be placed in the export bucket',
        }[err.step]
      : 'an unexpected error stopped it';
  // These are faults of the moment (a store or bucket unreachable), not of the request.
  return `could not export ${object}: ${what}; the export can be requested again`;
}
