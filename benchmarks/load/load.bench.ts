import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { loadavg, tmpdir } from 'node:os';
import { args, median, printTable, writeResults, type Row } from '../lib/stats.js';

/**
 * `npm run bench:load`: one events CSV of `--rows` rows (several sizes: `--rows 1000000,5000000`) dropped
 * into the all-in-one platform's incoming bucket, measured from the drop to the last row visible in the
 * store, beside two baselines on the same file in the same round: a raw csv-parse of it, and the best
 * case of a direct store insert of its rows (a fresh table, `--insert-size` rows an insert, the best of
 * `--formats`: benchmarks/load/load-baseline.ts, as bench:ingest's store baseline). Each round runs the
 * baselines and the platform in fresh processes of their own, one after the other, so each one's peak
 * RSS is its own: the platform's at each size shows whether memory stays flat as the file grows.
 */
const opt = args({
  rows: '1000000',
  rounds: 3,
  population: 50_000,
  'insert-size': 50_000,
  formats: 'RowBinary (file),JSONCompactEachRow',
  'records-per-message': 1000,
  /** Empty: the platform's default (CDP_HEAP_GROWING_PERCENT); 0: V8's own heap growing. */
  'heap-growing-percent': '',
});
const sizes = String(opt.rows)
  .split(',')
  .map((s) => Number(s));
const HEADER = 'type,action,email,ts,page,title\n';
const MB = 2 ** 20;

async function writeFile(file: string, rows: number): Promise<void> {
  const out = createWriteStream(file);
  out.write(HEADER);
  const base = 1_700_000_000;
  for (let i = 0; i < rows; i++) {
    const line = `pageview,,u${i % Number(opt.population)}@example.com,${base + i},/p/${i % 1000},"Page ${i % 97}, ""quoted"""\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** Runs one of this folder's scripts in a fresh process and reads its JSON lines. */
function child(script: string, argv: string[]): Record<string, number | string>[] {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', new URL(script, import.meta.url).pathname, ...argv],
    { encoding: 'utf8', maxBuffer: 64 * MB, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, number | string>);
}

interface Round {
  parseRate: number;
  insertRate: number;
  insertFormat: string;
  readRate: number;
  publishedRate: number;
  loadRate: number;
  baselinePeakRss: number;
  platform: Record<string, number | string>;
  load: number;
}

const results: Row[] = [];
const memory: Row[] = [];
const rounds: Record<number, Round[]> = {};
for (const rows of sizes) {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bench-load-'));
  const file = join(dir, 'svc_events_bench.csv');
  await writeFile(file, rows);
  rounds[rows] = [];
  for (let r = 0; r < Number(opt.rounds); r++) {
    const load = loadavg()[0]!;
    const baseline = child('./load-baseline.js', [
      '--file',
      file,
      '--size',
      String(opt['insert-size']),
      '--formats',
      String(opt.formats),
    ]);
    const parsed = baseline.find((b) => b.baseline === 'csv-parse')!;
    const inserts = baseline.filter((b) => b.baseline === 'insert');
    for (const i of inserts)
      if (Number(i.stored) !== rows) throw new Error(`baseline stored ${i.stored} of ${rows}`);
    const best = inserts.reduce((a, b) => (Number(b.rowsPerSecond) > Number(a.rowsPerSecond) ? b : a));
    const [platform] = child('./load-platform.js', [
      '--file',
      file,
      '--rows',
      String(rows),
      '--records-per-message',
      String(opt['records-per-message']),
      ...(opt['heap-growing-percent'] === ''
        ? []
        : ['--heap-growing-percent', String(opt['heap-growing-percent'])]),
    ]);
    const round: Round = {
      parseRate: rows / Number(parsed.seconds),
      insertRate: Number(best.rowsPerSecond),
      insertFormat: String(best.format),
      readRate: rows / Number(platform!.readSeconds ?? platform!.publishedSeconds),
      publishedRate: rows / Number(platform!.publishedSeconds),
      loadRate: rows / Number(platform!.loadSeconds),
      baselinePeakRss: Number(baseline.find((b) => b.baseline === 'memory')?.peakRss ?? 0),
      platform: platform!,
      load,
    };
    rounds[rows].push(round);
    process.stdout.write(
      `${rows} rows, round ${r + 1}: drop -> visible ${Math.round(round.loadRate)} rows/s, direct insert ${Math.round(round.insertRate)} (${round.insertFormat}), ratio ${(round.loadRate / round.insertRate).toFixed(2)}; csv-parse ${Math.round(round.parseRate)}; platform peak RSS ${Math.round(Number(platform!.peakRss) / MB)} MB; load average ${load.toFixed(1)}\n`,
    );
  }
  rmSync(dir, { recursive: true, force: true });

  const all = rounds[rows];
  const m = (f: (r: Round) => number) => median(all.map(f));
  const insertRate = m((r) => r.insertRate);
  const parseRate = m((r) => r.parseRate);
  const ratios = (f: (r: Round) => number) => ({
    'vs direct insert (median of rounds)': m((r) => f(r) / r.insertRate),
    'vs csv-parse (median of rounds)': m((r) => f(r) / r.parseRate),
  });
  results.push(
    { rows, scenario: 'raw csv-parse of the file', 'rows/s': parseRate, ...ratios((r) => r.parseRate) },
    {
      rows,
      scenario: `direct store insert of the same rows (best of ${String(opt.formats)}, ${opt['insert-size']} a time)`,
      'rows/s': insertRate,
      ...ratios((r) => r.insertRate),
    },
    {
      rows,
      scenario: "file dropped -> read and checked whole (loader's first pass, nothing published yet)",
      'rows/s': m((r) => r.readRate),
      ...ratios((r) => r.readRate),
    },
    {
      rows,
      scenario: 'file dropped -> all of it on the bus (loader: read, check, publish)',
      'rows/s': m((r) => r.publishedRate),
      ...ratios((r) => r.publishedRate),
    },
    {
      rows,
      scenario: 'file dropped -> rows visible (loader, bus, processor)',
      'rows/s': m((r) => r.loadRate),
      ...ratios((r) => r.loadRate),
    },
  );
  const p = (name: string) => m((r) => Number(r.platform[name]) / MB);
  memory.push({
    rows,
    rounds: all.length,
    'platform RSS before (MB)': p('rssBefore'),
    'platform peak RSS (MB)': p('peakRss'),
    'peak V8 heap reserved (MB)': p('peakHeapTotal'),
    'peak V8 heap used (MB)': p('peakHeapUsed'),
    'peak external buffers (MB)': p('peakExternal'),
    'peak chDB tracked (MB)': p('chdbPeak'),
    'JS heap kept after (MB)': p('heapKept'),
    'baselines process peak RSS (MB)': m((r) => r.baselinePeakRss / MB),
    'load average': m((r) => r.load),
  });
}
printTable('bulk file load benchmark (embedded wiring, one events CSV; medians of the rounds)', results);
printTable('memory of the platform process while it loads (medians of the rounds)', memory);
writeResults('load', { options: opt, results, memory, rounds });
process.exit(0);
