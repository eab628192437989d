import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  allFaultPoints,
  FAULT_POINTS,
  OTHER_FAULT_POINTS,
  STORE_TABLES,
  storeInsertPoint,
} from './points.js';

/** Every TypeScript source of the apps and libs but tests. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') && !e.name.includes('contract')
      ? [path]
      : [];
  });
}

describe('the catalogue of fault points', () => {
  const files = ['apps', 'libs'].flatMap(sources).filter((f) => !f.startsWith(join('libs', 'faults')));

  it('names every point the code reaches, so the crash suite kills the process at each', () => {
    const known = new Set([...allFaultPoints(), ...Object.values(OTHER_FAULT_POINTS)]);
    const literal = /faultPoint\(\s*(['"`])([^'"`$]+)\1\s*\)/g;
    // Points named from the catalogue, in the files that reach a point.
    const named = /FAULT_POINTS\.(\w+)/g;
    const used = new Set<string>();
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(literal)) used.add(m[2]!);
      if (!text.includes('faultPoint(')) continue;
      for (const m of text.matchAll(named)) {
        const name = FAULT_POINTS[m[1] as keyof typeof FAULT_POINTS];
        expect(name).toBeDefined();
        used.add(name);
      }
    }
    expect([...used].filter((p) => !known.has(p))).toEqual([]);
    for (const p of Object.values(FAULT_POINTS)) expect(used).toContain(p);
  });

  it('covers every table the store inserts into', () => {
    const store = readFileSync(join('libs', 'store', 'src', 'clickhouse.store.ts'), 'utf8');
    // Every table declaration of an account's database (libs/store/src/tables/account-tables.ts).
    const schema = readFileSync(join('libs', 'store', 'src', 'tables', 'account-tables.ts'), 'utf8');
    const tables = [...schema.matchAll(/defineTable\(\{\s+name: '(\w+)'/g)].map((m) => m[1]!);
    expect(tables.length).toBeGreaterThan(10);
    // The API's rejection counts are no part of the processor's write path (AnalyticStore.addRejections).
    const outsideWritePath = new Set(['ingest_rejections']);
    for (const t of tables) if (!outsideWritePath.has(t)) expect(STORE_TABLES).toContain(t);
    expect(store).toContain('faultPoint(storeInsertPoint(');
    expect(storeInsertPoint('customers')).toBe('store.insert.customers');
  });
});
