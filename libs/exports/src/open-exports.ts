import { MetadataConflictError, type MetadataStore, type Versioned } from '@cdp/metadata';
import { EXPORTS_BUCKET, isActive, type ExportJob } from './export-record.js';

/**
 * The exports still to finish (pending or running), one small record each, keyed by export id: what
 * the exporters poll instead of every export record ever written. A job enters when it is requested
 * and leaves once it is finished, so a poll reads the open exports only, however many finished ones
 * the deployment holds.
 */
export const OPEN_EXPORTS_BUCKET = 'exports-open';
/** Whether the open exports were filled from the export records (once, for records older than it). */
const OPEN_EXPORTS_STATE_BUCKET = 'exports-open-state';
const FILLED_KEY = 'filled';

/** An open export whose job record never appeared (the API died in between) is dropped after this. */
export const ORPHAN_MS = 60_000;

export interface OpenExport {
  requested_at: string;
  /** When the entry was written (ms since the epoch). */
  at: number;
}

/**
 * Records a new job: its open entry first, then the job. A crash between leaves an entry without a job,
 * which the exporters drop after ORPHAN_MS; never a job no exporter finds.
 */
export async function recordJob(metadata: MetadataStore, job: ExportJob, now: number): Promise<void> {
  const entry: OpenExport = { requested_at: job.record.requested_at, at: now };
  await metadata.create(OPEN_EXPORTS_BUCKET, job.record.id, entry);
  await metadata.create(EXPORTS_BUCKET, job.record.id, job);
}

/**
 * The open jobs, in the order they were requested: one listing of the open exports and one read per
 * open export. Entries of finished jobs (an exporter stopped between finishing and closing the entry)
 * and orphans are closed on the way.
 */
export async function openJobs(metadata: MetadataStore, now: number): Promise<Versioned<ExportJob>[]> {
  const entries = await metadata.list<OpenExport>(OPEN_EXPORTS_BUCKET);
  entries.sort((a, b) => (a.value.requested_at < b.value.requested_at ? -1 : 1));
  const jobs: Versioned<ExportJob>[] = [];
  for (const entry of entries) {
    const job = await metadata.get<ExportJob>(EXPORTS_BUCKET, entry.key);
    if (job && isActive(job.value.record.state)) jobs.push(job);
    else if (job || entry.value.at + ORPHAN_MS < now) await closeJob(metadata, entry.key);
  }
  return jobs;
}

/** Takes a finished job out of the open exports. */
export function closeJob(metadata: MetadataStore, id: string): Promise<void> {
  return metadata.delete(OPEN_EXPORTS_BUCKET, id);
}

/**
 * Opens an entry for every unfinished job written before the open exports existed: a full listing of
 * the export records, done once per deployment (the first exporter to start after the upgrade).
 */
export async function fillOpenExportsOnce(metadata: MetadataStore, now: number): Promise<void> {
  if (await metadata.get(OPEN_EXPORTS_STATE_BUCKET, FILLED_KEY)) return;
  for (const job of await metadata.list<ExportJob>(EXPORTS_BUCKET)) {
    if (!isActive(job.value.record.state)) continue;
    const entry: OpenExport = { requested_at: job.value.record.requested_at, at: now };
    await createIfAbsent(metadata, OPEN_EXPORTS_BUCKET, job.key, entry);
  }
  await createIfAbsent(metadata, OPEN_EXPORTS_STATE_BUCKET, FILLED_KEY, { at: now });
}

async function createIfAbsent(metadata: MetadataStore, bucket: string, key: string, value: unknown) {
  try {
    await metadata.create(bucket, key, value);
  } catch (err) {
    if (!(err instanceof MetadataConflictError)) throw err;
  }
}
