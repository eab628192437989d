import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, bucketNames, type AppConfig } from '@cdp/config';
import { ApiError } from '@cdp/contracts';
import { MetadataConflictError, MetadataStore, NewestFirstIndex } from '@cdp/metadata';
import { ExportCatalogs } from './export-objects.js';
import {
  definitionId,
  exportPrefix,
  EXPORT_LOCKS_BUCKET,
  EXPORTS_BUCKET,
  isActive,
  type ExportJob,
  type ExportLock,
  type ExportRecord,
} from './export-record.js';
import type { ExportDetail } from './export-request.js';
import { recordJob } from './open-exports.js';
import { compileMembers, type MemberDefinition } from './members.compiler.js';
import { compileSelect } from './select.compiler.js';

/** A lock whose export record never appeared (the API died in between) stops holding after this. */
const ORPHAN_LOCK_MS = 60_000;
/** Each account's exports in the order they were requested, read newest first a page at a time. */
export const EXPORTS_INDEX_BUCKET = 'exports-index';

/**
 * The API side of exports: checks a request, records the job in the metadata store and answers with
 * the record. It never opens the analytic store; an exporter picks the job up.
 */
@Injectable()
export class ExportsService {
  private readonly index: NewestFirstIndex;

  constructor(
    private readonly metadata: MetadataStore,
    private readonly catalogs: ExportCatalogs,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.index = new NewestFirstIndex(metadata, EXPORTS_INDEX_BUCKET);
  }

  /** Records an export of a checked request (the API's ExportRequestPipe reads it into its detail). */
  async request(
    account: string,
    trackerId: string,
    detail: ExportDetail,
    now = new Date(),
    /** The definition of the segment `detail.select.segment` names (the caller reads it). */
    members?: MemberDefinition,
  ): Promise<ExportRecord> {
    const catalog = await this.catalogs.forAccount(account, true);
    if (detail.select) {
      compileSelect(detail.select, catalog);
      if (detail.select.segment !== undefined) {
        if (!members) throw ApiError.notFound(`unable to locate segment ${detail.select.segment}`);
        compileMembers(members, catalog, now.getTime());
      }
    } else if (detail.objects.length === 0) {
      detail.objects = catalog.names();
    } else {
      const missing = detail.objects.find((o) => !catalog.object(o));
      if (missing) throw ApiError.notFound(`unable to locate object ${missing}`);
    }
    const id = randomUUID();
    await this.lock(account, detail.objects, id, now.getTime());
    // The slot in the account's index first: a crash before the job is written leaves a slot the
    // listing skips, never a job the listing misses.
    const { at } = await this.index.append(account, id, now.getTime());
    const record: ExportRecord = {
      id,
      // spec "Export record": `<bucket>/<tracker_id>/data-exports/<export_id>`: the S3 bucket's name, or
      // a directory bucket's.
      path: `${bucketNames(this.config).export}/${exportPrefix(trackerId, id)}`,
      state: 'pending',
      requested_at: new Date(at).toISOString(),
      definition_id: definitionId(detail),
      detail,
    };
    const job: ExportJob = { record, account, trackerId, attempts: 0, ...(members ? { members } : {}) };
    await recordJob(this.metadata, job, now.getTime());
    return record;
  }

  async get(account: string, id: string): Promise<ExportRecord> {
    const found = await this.metadata.get<ExportJob>(EXPORTS_BUCKET, id);
    if (!found || found.value.account !== account) throw ApiError.notFound(`unable to locate export ${id}`);
    return found.value.record;
  }

  /**
   * spec: without an id, the in-flight (pending or running) exports. An export in flight holds the lock
   * of every object it exports, so they are found through the account's locks (one per object of its
   * schema), whatever the number of exports it ever requested.
   */
  async inFlight(account: string): Promise<ExportRecord[]> {
    const catalog = await this.catalogs.forAccount(account);
    const locks = await Promise.all(
      catalog
        .names()
        .map((object) => this.metadata.get<ExportLock>(EXPORT_LOCKS_BUCKET, `${account}/${object}`)),
    );
    const ids = new Set(locks.flatMap((l) => (l?.value.export_id ? [l.value.export_id] : [])));
    const jobs = await Promise.all([...ids].map((id) => this.metadata.get<ExportJob>(EXPORTS_BUCKET, id)));
    return jobs
      .flatMap((j) =>
        j && j.value.account === account && isActive(j.value.record.state) ? [j.value.record] : [],
      )
      .sort((a, b) => (a.requested_at < b.requested_at ? -1 : a.requested_at > b.requested_at ? 1 : 0));
  }

  /** The account's exports, newest first, finished ones included (the console's exports page). */
  async recent(account: string, limit = 50): Promise<ExportRecord[]> {
    const page = await this.index.page(account, limit, undefined, async (slot) => {
      const job = await this.metadata.get<ExportJob>(EXPORTS_BUCKET, slot.id);
      return job?.value.account === account ? job.value.record : undefined;
    });
    return page.items.map((i) => i.item);
  }

  /**
   * Takes every object's lock or none (spec "Errors": 422 for objects currently being exported,
   * naming them). Create-if-absent and compare-and-set decide between concurrent requests.
   */
  private async lock(account: string, objects: string[], id: string, now: number): Promise<void> {
    const taken: { key: string; revision: number }[] = [];
    const busy: string[] = [];
    for (const object of objects) {
      const key = `${account}/${object}`;
      const revision = await this.take(key, id, now);
      if (revision === undefined) busy.push(object);
      else taken.push({ key, revision });
    }
    if (busy.length === 0) return;
    for (const t of taken) {
      await this.metadata
        .update<ExportLock>(EXPORT_LOCKS_BUCKET, t.key, { export_id: null, at: now }, t.revision)
        .catch(() => undefined);
    }
    throw new ApiError(422, {
      message: `already being exported: ${busy.join(', ')}`,
    });
  }

  private async take(key: string, id: string, now: number): Promise<number | undefined> {
    const lock: ExportLock = { export_id: id, at: now };
    try {
      return await this.metadata.create(EXPORT_LOCKS_BUCKET, key, lock);
    } catch (err) {
      if (!(err instanceof MetadataConflictError)) throw err;
    }
    const current = await this.metadata.get<ExportLock>(EXPORT_LOCKS_BUCKET, key);
    if (!current) return undefined;
    if (current.value.export_id) {
      const holder = await this.metadata.get<ExportJob>(EXPORTS_BUCKET, current.value.export_id);
      const holds = holder ? isActive(holder.value.record.state) : now - current.value.at < ORPHAN_LOCK_MS;
      if (holds) return undefined;
    }
    try {
      return await this.metadata.update(EXPORT_LOCKS_BUCKET, key, lock, current.revision);
    } catch (err) {
      if (err instanceof MetadataConflictError) return undefined;
      throw err;
    }
  }
}
