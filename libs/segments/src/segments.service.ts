import { Injectable } from '@nestjs/common';
import { ApiError } from '@cdp/contracts';
import {
  compileMembers,
  compileSelect,
  SchemaExportCatalogs,
  type ColumnType,
  type ExportDetail,
} from '@cdp/exports';
import { CachedRecords, MetadataCacheClock, MetadataStore } from '@cdp/metadata';
import { SchemaRegistry } from '@cdp/schema';
import { SegmentSizes } from './segment-sizes.port.js';
import { MAX_SEGMENTS, type Segment, type SegmentDefinition } from './segment.js';

/** Metadata bucket of segments: one record per account holding all its segments. */
const BUCKET = 'segments';
/** How long an API replica evaluates with the definitions it read; a change reaches every replica within this. */
export const SEGMENTS_CACHE_MS = 2_000;

/** `GET /v3/segments/{id}/size`: the segment's members counted at `as_of`. */
export interface SegmentSize {
  segment_id: string;
  customers: number;
  as_of: string;
}

interface AccountSegments {
  segments: Segment[];
}

/** What a create or replace sets (checked for shape by the API's DTO). */
export interface SegmentInput {
  name: string;
  description?: string;
  definition: SegmentDefinition;
}

/**
 * An account's segments (audiences), all in one metadata record changed by compare-and-set: an id is
 * claimed in the same atomic write that stores the segment, so two replicas never both create it.
 */
@Injectable()
export class SegmentsService {
  private readonly records: CachedRecords<AccountSegments, Segment[]>;
  private readonly catalogs: SchemaExportCatalogs;

  constructor(
    metadata: MetadataStore,
    schema: SchemaRegistry,
    private readonly sizes: SegmentSizes,
    @MetadataCacheClock() now?: () => number,
  ) {
    this.catalogs = new SchemaExportCatalogs(schema);
    this.records = new CachedRecords(metadata, BUCKET, {
      ttlMs: SEGMENTS_CACHE_MS,
      view: (found) => found?.value.segments ?? [],
      now,
    });
  }

  all(account: string): Promise<Segment[]> {
    return this.records.read(account);
  }

  /** The segments a lookup evaluates (a copy at most SEGMENTS_CACHE_MS old). */
  cached(account: string): Promise<Segment[]> {
    return this.records.cached(account);
  }

  async get(account: string, id: string): Promise<Segment> {
    const found = (await this.all(account)).find((s) => s.id === id);
    if (!found) throw ApiError.notFound(`unable to locate segment ${id}`);
    return found;
  }

  /**
   * The definition an export of a segment's members selects by (`select.segment`), read when the export
   * is requested so a later change of the segment does not change it; undefined for any other export.
   * Every way of requesting an export (the API, the console) takes it from here.
   */
  async exportMembers(account: string, detail: ExportDetail): Promise<SegmentDefinition | undefined> {
    const segment = detail.select?.segment;
    return segment ? (await this.get(account, segment)).definition : undefined;
  }

  /**
   * How many customers the segment selects now: the definition as one SQL selection, counted by the
   * store (or its owner). Checked here first, so a definition the schema no longer supports (a custom
   * field deleted since) answers in the envelope rather than as the store's error.
   */
  async size(account: string, id: string): Promise<SegmentSize> {
    const segment = await this.get(account, id);
    const now = Date.now();
    compileMembers(segment.definition, await this.catalogs.forAccount(account), now);
    const customers = await this.sizes.size({ account, definition: segment.definition, now });
    return { segment_id: id, customers, as_of: new Date(now).toISOString() };
  }

  async create(account: string, id: string, input: SegmentInput): Promise<Segment> {
    await this.check(account, input.definition);
    return this.change(account, (segments) => {
      if (segments.some((s) => s.id === id))
        throw ApiError.invalid([{ field: 'id', reason: 'segment id must be unique' }]);
      if (segments.length >= MAX_SEGMENTS)
        throw ApiError.invalid([{ field: 'id', reason: `an account has at most ${MAX_SEGMENTS} segments` }]);
      const now = new Date().toISOString();
      const segment: Segment = { id, ...withDescription(input), created_at: now, updated_at: now };
      segments.push(segment);
      return segment;
    });
  }

  async replace(account: string, id: string, input: SegmentInput): Promise<Segment> {
    await this.check(account, input.definition);
    return this.change(account, (segments) => {
      const i = segments.findIndex((s) => s.id === id);
      if (i === -1) throw ApiError.notFound(`unable to locate segment ${id}`);
      const segment: Segment = {
        id,
        ...withDescription(input),
        created_at: segments[i]!.created_at,
        updated_at: new Date().toISOString(),
      };
      segments[i] = segment;
      return segment;
    });
  }

  async remove(account: string, id: string): Promise<void> {
    await this.change(account, (segments) => {
      const i = segments.findIndex((s) => s.id === id);
      if (i === -1) throw ApiError.notFound(`unable to locate segment ${id}`);
      return segments.splice(i, 1)[0]!;
    });
  }

  /** Each customer field's type, as the filter compares it (the account's custom fields included). */
  async customerTypes(account: string): Promise<Map<string, ColumnType>> {
    const object = (await this.catalogs.forAccount(account)).object('customers');
    return new Map((object?.columns ?? []).map((c) => [c.name, c.type]));
  }

  /**
   * The customer filter checked exactly as an export's filter on customers is (404 for an unknown
   * field, 400 for a value its field's type cannot hold); relation paths are refused, as a segment is
   * evaluated on the profile alone.
   */
  private async check(account: string, definition: SegmentDefinition): Promise<void> {
    const filter = definition.customer;
    if (!filter) return;
    const paths: string[] = [];
    const walk = (f: typeof filter): void => {
      if ('and' in f) f.and.forEach(walk);
      else if ('or' in f) f.or.forEach(walk);
      else if ('not' in f) walk(f.not);
      else paths.push(f.field);
    };
    walk(filter);
    const related = paths.find((p) => p.includes('.'));
    if (related)
      throw ApiError.invalid([
        {
          field: 'definition.customer',
          reason: `${related}: a segment filters customer fields, not relations`,
        },
      ]);
    try {
      compileSelect(
        { object: 'customers', fields: ['svc_id'], filter },
        await this.catalogs.forAccount(account),
      );
    } catch (err) {
      // The compiler names the export's body; the same problem here is in the segment's definition.
      if (err instanceof ApiError && 'invalids' in err.detail)
        throw ApiError.invalid(
          err.detail.invalids.map((p) => ({
            ...p,
            field: p.field === 'select.filter' ? 'definition.customer' : p.field,
          })),
        );
      throw err;
    }
  }

  private async change(account: string, mutate: (segments: Segment[]) => Segment): Promise<Segment> {
    let result!: Segment;
    await this.records.update(account, (found) => {
      const segments = [...(found?.value.segments ?? [])];
      result = mutate(segments);
      return { segments };
    });
    return result;
  }
}

function withDescription(input: SegmentInput): Pick<Segment, 'name' | 'description' | 'definition'> {
  return { name: input.name, description: input.description ?? '', definition: input.definition };
}
