import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STORE_TABLES } from '@cdp/faults';
import { ChdbTransport } from '../chdb/chdb.transport.js';
import { ClickHouseStore } from '../clickhouse.store.js';
import {
  ACCOUNT_TABLES,
  CUSTOMERS,
  EVENTS,
  INGEST_REJECTIONS,
  accountTables,
  databaseName,
} from './account-tables.js';
import { declaredColumnNames, keptOnRedaction, tableSql } from './table.js';
import { databaseShape } from '../testing/database-shape.js';

/**
 * The statements the schema was written as before tables were declared (schema.sql.ts), `;;` apart:
 * the databases existing data directories hold were made by them.
 */
/** Tables added after the declarations: the API's rejection counts (docs/console.md). */
const TABLES_SINCE = [INGEST_REJECTIONS.name];
/** Event data fields added after the declarations: Optimizely's SDK fields (docs/api-notes.md). */
const EVENT_FIELDS_SINCE = ['idempotence_id', 'data_source_type', 'data_source', 'data_source_version'];

const BEFORE = readFileSync(
  join('libs', 'store', 'src', 'tables', 'fixtures', 'account-ddl-before-declarations.sql'),
  'utf8',
);

describe('account table declarations', () => {
  /** The partition keys time-ordered tables got later: an older database's tables have none. */
  const unpartitioned = (sql: string) => sql.replaceAll(/ PARTITION BY toYYYYMM\(\w+\)/g, '');
  /** The merge settings append-only tables got later (table.ts `mergeSettings`), and their ALTERs. */
  const withoutMergeSettings = (sql: string) =>
    /MODIFY SETTING merge_selector_base/.test(sql) ? '' : sql.replace(', merge_selector_base = 20', '');

  it('generate the statements the hand-written schema ran, statement for statement, but for partition keys and merge settings', () => {
    const before = BEFORE.split('\n;;\n').map((s) => s.replaceAll('{db}', 'cdp_x'));
    // Fields added since (their columns, and where an older table gets them) are no part of that schema.
    const since = new RegExp(`^.*\\b(${EVENT_FIELDS_SINCE.join('|')})\\b.*$\\n?`, 'gm');
    const generated = [...accountTables('cdp_x')]
      .map((s) =>
        withoutMergeSettings(unpartitioned(s))
          .replace(since, '')
          .replace(/ AFTER \S+$/, ''),
      )
      .filter((s) => s !== '' && !TABLES_SINCE.some((t) => s.includes(`cdp_x.${t} `)));
    expect(generated.sort()).toEqual([...before].sort());
    const partitioned = accountTables('cdp_x').flatMap(
      (s) => /^CREATE TABLE.* cdp_x\.(\w+) [\s\S]* PARTITION BY (.*) ORDER BY/.exec(s)?.slice(1, 3) ?? [],
    );
    expect(partitioned).toEqual([
      'identity_conflicts',
      'toYYYYMM(created_at)',
      'events',
      'toYYYYMM(ts)',
      'line_items',
      'toYYYYMM(ts)',
      'consent_history',
      'toYYYYMM(changed_at)',
      'identifier_updates',
      'toYYYYMM(changed_at)',
      'optout_requests',
      'toYYYYMM(requested_at)',
      'ingest_rejections',
      'toYYYYMM(minute)',
    ]);
  });

  it('name only tables the crash suite kills the processor in front of', () => {
    // The API's rejection counts are written outside the processor's batches (AnalyticStore.addRejections).
    for (const table of ACCOUNT_TABLES)
      if (table !== INGEST_REJECTIONS) expect(STORE_TABLES).toContain(table.name);
  });

  it('say what a redaction keeps, and spread field groups into columns in place', () => {
    expect([...keptOnRedaction(CUSTOMERS)].sort()).toEqual(
      ['field_at', 'merged_into', 'msg_id', 'opted_in', 'redacted', 'svc_id', 'updated_at', 'version'].sort(),
    );
    const events = declaredColumnNames(EVENTS);
    expect(events.slice(0, 9)).toEqual([
      'event_id',
      'msg_id',
      'svc_id',
      'ts',
      'received_at',
      'type',
      'action',
      'channel',
      'identifiers',
    ]);
    expect(events.at(-1)).toBe('order');
    expect(tableSql('d', EVENTS)[0]).toContain('`order` Nullable(String)');
  });

  describe('on chDB', () => {
    let transport: ChdbTransport;
    beforeAll(() => {
      transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-tables-')));
    });
    afterAll(() => transport.close());

    it('open a database the hand-written schema made, which then matches a new one but for partition keys', async () => {
      const store = new ClickHouseStore(transport);
      const old = databaseName('before_decl');
      for (const statement of BEFORE.split('\n;;\n')) await transport.exec(statement.replaceAll('{db}', old));
      await store.ensureAccount('before_decl');
      await store.ensureAccount('after_decl');
      const [a, b] = [
        await databaseShape(transport, old),
        await databaseShape(transport, databaseName('after_decl')),
      ];
      expect((JSON.parse(a) as unknown[]).length).toBeGreaterThan(ACCOUNT_TABLES.length + 100);
      // A table added since is created, partitioned, in the older database as in a new one, and the
      // merge settings added since are set on its tables.
      expect(unpartitioned(a)).toBe(unpartitioned(b));
    });

    it("give an older database's append-only tables the merge settings, then find it up to date", async () => {
      const old = databaseName('before_merge_settings');
      // The tables as they were made before merge settings existed.
      for (const statement of accountTables(old).map(withoutMergeSettings))
        if (statement) await transport.exec(statement);
      const engines = async () =>
        new Map(
          (
            await transport.query<{ name: string; engine_full: string }>(
              'SELECT name, engine_full FROM system.tables WHERE database = {db:String}',
              { db: old },
            )
          ).map((t) => [t.name, t.engine_full]),
        );
      expect((await engines()).get('events')).not.toContain('merge_selector_base');
      const ddl: string[] = [];
      const counting = Object.create(transport) as ChdbTransport;
      counting.exec = (sql: string) => (ddl.push(sql), transport.exec(sql));
      await new ClickHouseStore(counting).ensureAccount('before_merge_settings');
      expect(ddl.some((sql) => sql.includes('events MODIFY SETTING merge_selector_base = 20'))).toBe(true);
      const after = await engines();
      for (const table of ['events', 'identity_links', 'ingest_commits', 'consent_history'])
        expect(after.get(table)).toContain('merge_selector_base = 20');
      // Tables whose merges collapse rows keep the engine's default: their reads pay for unmerged parts.
      for (const table of ['customers', 'orders', 'products', 'ingest_rejections'])
        expect(after.get(table)).not.toContain('merge_selector_base');
      // Opened again by a new process: up to date, so no DDL runs.
      ddl.length = 0;
      const again = new ClickHouseStore(counting);
      await again.ensureAccount('before_merge_settings');
      // So do tables ensured on their own (the recommendations' way) once they are up to date.
      await again.ensureTables('before_merge_settings', [EVENTS]);
      expect(ddl.filter((sql) => !sql.includes(' TTL'))).toEqual([]);
    });
  });
});
