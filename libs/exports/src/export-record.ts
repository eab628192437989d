import { createHash } from 'node:crypto';
import type { ExportDetail } from './export-request.js';
import type { MemberDefinition } from './members.compiler.js';

/** spec "Export state". */
export type ExportState = 'pending' | 'running' | 'completed' | 'completed_with_errors';

export interface ObjectFailure {
  object: string;
  reason: string;
}

/** The export record of the spec ("Export record"), as `GET /v3/exports/{id}` answers it. */
export interface ExportRecord {
  id: string;
  path: string;
  state: ExportState;
  requested_at: string;
  /** spec/NOTES.md: the row the brand replacement named `{base_url}`. */
  definition_id: string;
  detail: ExportDetail;
  /** Objects that could not be exported, and why (state completed_with_errors). */
  errors?: ObjectFailure[];
  completed_at?: string;
}

/** The record as the metadata store keeps it, with what the workers need to share the job. */
export interface ExportJob {
  record: ExportRecord;
  account: string;
  trackerId: string;
  /**
   * The definition of the segment the select names (`select.segment`), as it was when the export was
   * requested: a segment changed or deleted afterwards does not change what this export selects.
   */
  members?: MemberDefinition;
  /** The worker running it, and when that worker last said it still is (ms since the epoch). */
  owner?: string;
  heartbeat?: number;
  attempts: number;
}

/** The lock that makes an object exportable by one export at a time (spec "Errors": 422). */
export interface ExportLock {
  export_id: string | null;
  /** When the lock was taken; a lock whose job never got written is stale after a while. */
  at: number;
}

export const EXPORTS_BUCKET = 'exports';
export const EXPORT_LOCKS_BUCKET = 'export-locks';

export function isActive(state: ExportState): boolean {
  return state === 'pending' || state === 'running';
}

/** Where an export's files go inside the export bucket (spec "Export record": `path`). */
export function exportPrefix(trackerId: string, exportId: string): string {
  return `${trackerId}/data-exports/${exportId}`;
}

/** The same definition gives the same id, so repeated exports of one definition can be told apart by it. */
export function definitionId(detail: ExportDetail): string {
  return createHash('sha256').update(canonical(detail)).digest('hex').slice(0, 32);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
