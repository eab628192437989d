import { Metrics } from '@cdp/metrics';
import { countRows } from '../../libs/store/src/metered.transport.js';

/**
 * `npm run bench:metrics`: what the metrics hooks cost on the hot paths, measured on their own (a
 * micro-benchmark: no server, no store). Each hook runs once per request, per batch or per insert,
 * so these figures compare with a request's or a batch's own time (milliseconds), not a record's.
 */
const metrics = new Metrics();

function perCall(label: string, calls: number, fn: (i: number) => void): void {
  for (let i = 0; i < Math.min(calls, 1000); i++) fn(i); // warm-up
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) fn(i);
  const ns = Number(process.hrtime.bigint() - started) / calls;
  process.stdout.write(`${label.padEnd(64)} ${ns.toFixed(0).padStart(9)} ns\n`);
}

const routes = ['/v3/events', '/v3/profiles', '/v3/profiles/:id'];
perCall('HTTP hook, per request (labelled counter + histogram)', 1e6, (i) => {
  metrics.httpRequests.inc({ method: 'POST', route: routes[i % 3]!, status: 202 });
  metrics.httpDuration.observe({ method: 'POST', route: routes[i % 3]! }, 0.003);
});
perCall('records accepted, per request', 1e6, () => metrics.recordsAccepted.inc({ kind: 'events' }, 100));
perCall('settled batch of 32 messages (stored by kind, lag per message)', 1e5, () => {
  const now = Date.now();
  let records = 0;
  for (let i = 0; i < 32; i++) {
    records += 300;
    metrics.messageLag.observe((now - (now - 50)) / 1000);
  }
  metrics.recordsStored.inc({ kind: 'events' }, records);
});
perCall('store insert timer + rows, per insert', 1e6, () => {
  const stop = metrics.storeInsertDuration.startTimer({ table: 'events' });
  stop({ outcome: 'ok' });
  metrics.storeInsertRows.inc({ table: 'events' }, 10_000);
});
const row = JSON.stringify({
  msg_id: 'x'.repeat(36),
  type: 'purchase',
  identifiers: { email: 'someone@example.com' },
  data: { price: 12.5, product_id: 'p-123', note: 'y'.repeat(150) },
});
const text = Array.from({ length: 10_000 }, () => row).join('\n');
perCall(`counting the rows of one insert (10,000 rows, ${(text.length / 1e6).toFixed(1)} MB)`, 200, () =>
  countRows(text),
);
const started = process.hrtime.bigint();
const exposition = await metrics.exposition();
process.stdout.write(
  `${'one scrape (every metric, process metrics included)'.padEnd(64)} ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(2).padStart(9)} ms, ${exposition.length} bytes\n`,
);
