import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChdbTransport } from '@cdp/store/chdb';
import { tableSql } from '@cdp/store';
import { databaseShape } from '@cdp/store/testing';
import { REC_TABLES } from './recommendations.sql.js';

/** The statements the recommendation tables were written as before they were declared, `;;` apart. */
const BEFORE = readFileSync(
  join('libs', 'recommendations', 'src', 'fixtures', 'recs-ddl-before-declarations.sql'),
  'utf8',
).split('\n;;\n');

describe('recommendation table declarations on chDB', () => {
  let transport: ChdbTransport;
  beforeAll(() => {
    transport = new ChdbTransport(mkdtempSync(join(tmpdir(), 'cdp-rec-tables-')));
  });
  afterAll(() => transport.close());

  const shape = (db: string) => databaseShape(transport, db);

  it('make the same tables the hand-written statements made, and open those', async () => {
    for (const db of ['rec_before', 'rec_after']) await transport.exec(`CREATE DATABASE ${db}`);
    for (const statement of BEFORE) await transport.exec(statement.replaceAll('{db}', 'rec_before'));
    for (const statement of REC_TABLES.flatMap((t) => tableSql('rec_after', t)))
      await transport.exec(statement);
    // Opening a database the old statements made changes only what was added since: the append-only
    // tables' merge settings.
    expect(await shape('rec_before')).not.toContain('merge_selector_base');
    for (const statement of REC_TABLES.flatMap((t) => tableSql('rec_before', t)))
      await transport.exec(statement);
    const before = await shape('rec_before');
    expect(before).toContain('rec_sales');
    expect(before).toContain('merge_selector_base = 20');
    expect(await shape('rec_after')).toBe(before);
  });
});
