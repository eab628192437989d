import { identifierList, type Identifier } from '@cdp/domain';
import { MemoryIdentityIndex, MemoryProfileState } from '@cdp/identity/memory';
import { args, printTable, writeResults } from '../lib/stats.js';

/**
 * Bytes per customer of the embedded hot state: the identity index and the hot profiles after
 * `--customers` customers (email + vuid each) were resolved and their profiles written, as the
 * processor does, in batches of 10,000. Heap measured after a full GC (run with `--expose-gc`).
 *
 *   node --expose-gc dist/benchmarks/ingest/identity-memory.js --customers 1000000
 */
// `--profiles no`: the identity index alone
const opt = args({ customers: 1_000_000, profiles: 'yes' });
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const heap = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

const index = new MemoryIdentityIndex();
const profiles = new MemoryProfileState();
const account = 'acct';
const before = heap();
const rssBefore = process.memoryUsage.rss();
const started = performance.now();
const total = Number(opt.customers);
for (let at = 0; at < total; at += 10_000) {
  const message = `m${at}`;
  const records = Array.from({ length: Math.min(10_000, total - at) }, (_, i) => {
    const n = at + i;
    const ids: Identifier[] = identifierList({ email: `customer${n}@example.com`, vuid: `vuid-${n}` });
    return { ids, seed: `${message}:${i}`, born: `${Date.now()}`, message, index: i };
  });
  const resolutions = await index.resolve(account, records);
  if (opt.profiles !== 'no')
    await profiles.apply(
      account,
      resolutions.map((r, i) => ({
        customerId: r.customerId,
        update: { email: records[i]!.ids.find((id) => id.kind === 'email')!.value },
      })),
    );
  await index.settle(account, [message]);
}
const seconds = (performance.now() - started) / 1000;
const after = heap();
const rows = [
  {
    customers: total,
    'hot profiles': String(opt.profiles),
    'heap MB': (after - before) / 1e6,
    'bytes per customer (heap)': (after - before) / total,
    'RSS growth MB': (process.memoryUsage.rss() - rssBefore) / 1e6,
    'resolve + apply s': seconds,
  },
];
printTable('embedded identity index and hot profiles', rows);
process.stdout.write(`results: ${writeResults('identity-memory', { options: opt, rows })}\n`);
