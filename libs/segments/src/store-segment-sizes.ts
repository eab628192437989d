import { compileMembers, type ExportCatalogs } from '@cdp/exports';
import type { AnalyticStore } from '@cdp/store';
import { SegmentSizes, type SegmentSizeRequest } from './segment-sizes.port.js';

/**
 * Counts a definition's members in the store with the one selection exports use too
 * (`compileMembers`): the customer filter and the event conditions in one statement.
 */
export class StoreSegmentSizes extends SegmentSizes {
  /** Per account, the declared customer columns already added: DDL once, not before every count. */
  private readonly added = new Map<string, string>();

  constructor(
    private readonly store: AnalyticStore,
    private readonly catalogs: ExportCatalogs,
  ) {
    super();
  }

  async size({ account, definition, now }: SegmentSizeRequest): Promise<number> {
    const catalog = await this.catalogs.forAccount(account);
    // A custom field the schema declares but no profile has set yet is a column all the same (NULL).
    const declared = catalog.object('customers')?.declared;
    if (declared?.kind === 'fields') {
      const signature = JSON.stringify(declared.columns);
      if (this.added.get(account) !== signature) {
        await this.store.addColumns(account, declared.table, declared.columns);
        this.added.set(account, signature);
      }
    }
    const { sql, params } = compileMembers(definition, catalog, now);
    const rows = await this.store.query<{ n: number | string }>(
      account,
      `SELECT count() AS n FROM (${sql})`,
      params,
    );
    return Number(rows[0]?.n ?? 0);
  }
}
