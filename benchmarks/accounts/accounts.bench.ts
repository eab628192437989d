import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClickHouseStore } from '@cdp/store';
import { args, median, printTable, writeResults } from '../lib/stats.js';

/**
 * `npm run bench:accounts`: how many accounts one chDB data directory (a database per account) holds.
 * Three runs, each in a fresh process so memory is the process's own: `create` makes `accounts`
 * accounts' tables (what an account's first write does), `open` starts on that directory and opens each
 * account again (what a restarted processor does at each account's first message), `idle` only starts
 * on it (the engine loads every table's metadata at start, whether used or not).
 */
const opt = args({ accounts: 1000, phase: 'all', dir: '' });
const accounts = Array.from({ length: Number(opt.accounts) }, (_, i) => `bench${String(i).padStart(5, '0')}`);

const mb = (bytes: number) => Math.round(bytes / (1 << 20));

async function phase(name: string, dir: string): Promise<Record<string, number>> {
  const started = performance.now();
  const transport = new ChdbTransport(dir);
  const store = new ClickHouseStore(transport);
  await transport.ping();
  const sessionMs = performance.now() - started;
  const each: number[] = [];
  if (name !== 'idle') {
    for (const account of accounts) {
      const t = performance.now();
      await store.ensureAccount(account);
      each.push(performance.now() - t);
    }
  }
  const totalMs = performance.now() - started;
  const [tables] = await transport.query<{ n: number }>(
    "SELECT count() AS n FROM system.tables WHERE database LIKE 'cdp\\_%'",
  );
  const rssMb = mb(process.memoryUsage().rss);
  await store.close();
  return {
    session_open_ms: sessionMs,
    total_s: totalMs / 1000,
    per_account_median_ms: each.length ? median(each) : 0,
    per_account_p99_ms: each.length ? [...each].sort((a, b) => a - b)[Math.floor(each.length * 0.99)]! : 0,
    tables: Number(tables?.n ?? 0),
    rss_mb: rssMb,
  };
}

if (opt.phase !== 'all') {
  process.stdout.write(`${JSON.stringify(await phase(String(opt.phase), String(opt.dir)))}\n`);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-accounts-'));
  const self = fileURLToPath(import.meta.url);
  const rows = [];
  for (const name of ['create', 'open', 'idle']) {
    const run = spawnSync(
      process.execPath,
      [self, '--accounts', String(opt.accounts), '--phase', name, '--dir', dir],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    if (run.status !== 0) throw new Error(`${name} run failed (${run.status})`);
    const figures = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, number>;
    rows.push({ phase: name, ...figures });
  }
  const disk = execFileSync('du', ['-sm', dir], { encoding: 'utf8' }).split('\t')[0]!;
  rows.push({ phase: 'disk', total_s: 0, tables: 0, rss_mb: Number(disk) });
  printTable(`${opt.accounts} accounts on chDB (a database each), data dir ${dir}`, rows);
  process.stdout.write(`results: ${writeResults('accounts', { accounts: Number(opt.accounts), rows })}\n`);
}
