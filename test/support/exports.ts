import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getWithKey, postWithKey } from './api-calls.js';
import { eventually } from './eventually.js';
import { exportDirOnDisk, type Platform } from './wirings.js';

export interface ManifestFile {
  path: string;
  object: string;
  rows: number;
  bytes: number;
  sha256: string;
}
export interface Manifest {
  export_id: string;
  state: string;
  files: ManifestFile[];
  columns: Record<string, Record<string, string>>;
}
export interface ExportRecord {
  id: string;
  path: string;
  state: string;
  errors?: { object: string; reason: string }[];
}

/** States an export never leaves (spec "Exports"). */
const FINAL_STATES = ['completed', 'completed_with_errors', 'failed'];

/** An export that has finished, read as a user reads it: its record, then its files on this machine. */
export class FinishedExport {
  constructor(
    readonly record: ExportRecord,
    private readonly p: Platform,
  ) {}

  /** The export's directory (the record's `path`, under the export bucket). */
  get dir(): string {
    return exportDirOnDisk(this.p, this.record.path);
  }

  /** complete.json, written last: the files of the export and their columns. */
  manifest(): Manifest {
    return JSON.parse(readFileSync(join(this.dir, 'complete.json'), 'utf8')) as Manifest;
  }

  /** Where a file the manifest names is on this machine (its `path` names the bucket, not the disk). */
  fileOf(f: { path: string }): string {
    return join(this.dir, f.path.split('/').pop()!);
  }
}

/** Polls an export's record (GET /v3/exports/{id}) until it has finished, whatever the outcome. */
export async function finishedExport(
  p: Platform,
  key: string,
  id: string,
  timeoutMs = 30_000,
): Promise<FinishedExport> {
  const record = await eventually(async () => {
    const res = await getWithKey(p, key, `/v3/exports/${id}`);
    return FINAL_STATES.includes(res.body.state as string) ? (res.body as ExportRecord) : false;
  }, timeoutMs);
  return new FinishedExport(record, p);
}

/**
 * Requests an export (POST /v3/exports, answered 202) and waits until it has finished. The state is
 * the test's to assert: a failed export returns at once rather than after the deadline.
 */
export async function runExport(
  p: Platform,
  key: string,
  body: object,
  timeoutMs = 30_000,
): Promise<FinishedExport> {
  const res = await postWithKey(p, key, '/v3/exports', body);
  expect(res.status).toBe(202);
  return finishedExport(p, key, res.body.id as string, timeoutMs);
}

/** `runExport` for an export the test expects to complete (every object written, no errors). */
export async function completedExport(
  p: Platform,
  key: string,
  body: object,
  timeoutMs?: number,
): Promise<FinishedExport> {
  const exported = await runExport(p, key, body, timeoutMs);
  expect(exported.record.state).toBe('completed');
  return exported;
}
