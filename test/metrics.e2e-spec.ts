import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventBus } from '@cdp/bus';
import { configureFaults, parseFaults } from '@cdp/faults';
import { parseExposition, sampleValue, type Sample } from '@cdp/metrics';
import { ADMIN_TOKEN, EmbeddedPlatform, type TestAccount } from './support/embedded.js';
import { eventually } from './support/eventually.js';
import { ScaledPlatform } from './support/scaled.js';
import { type Platform, startWithAccount, WIRINGS } from './support/wirings.js';
import { completedExport } from './support/exports.js';
import { postWithKey } from './support/api-calls.js';

/**
 * What an operator's Prometheus sees: every role serves `GET /metrics` without a key, and its counters
 * agree with what was sent and stored. Scaled out, the API counts what it accepted and the processor,
 * on its own port, what it stored.
 */
describe.each(WIRINGS)('metrics and health probes (%s)', (_wiring, start) => {
  let p: Platform;
  let acc: TestAccount;

  beforeAll(async () => ({ p, acc } = await startWithAccount(start, 'metrics')), 60_000);
  afterAll(() => p.close(), 30_000);

  /** The base URL of the process running the processor (the same process when embedded). */
  const processorUrl = () => (p instanceof ScaledPlatform ? p.processor!.baseUrl : undefined);

  async function scrape(base?: string): Promise<Sample[]> {
    const res = base ? await fetch(`${base}/metrics`) : await p.http().get('/metrics');
    const status = 'statusCode' in res ? res.statusCode : res.status;
    expect(status).toBe(200);
    const type = 'statusCode' in res ? String(res.headers['content-type']) : res.headers.get('content-type');
    expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseExposition('statusCode' in res ? res.text : await res.text());
  }

  it('counts the requests, the records accepted and stored, the inserts and the identity resolves', async () => {
    const api0 = await scrape();
    const proc0 = await scrape(processorUrl());
    const requests = 4;
    const perRequest = 5;
    for (let r = 0; r < requests; r++) {
      const res = await p
        .http()
        .post('/v3/events')
        .set('x-api-key', acc.publicKey)
        .send(
          Array.from({ length: perRequest }, (_, i) => ({
            type: 'metrics',
            identifiers: { vuid: `m-${r}-${i}` },
          })),
        );
      expect(res.status).toBe(202);
    }
    const sent = requests * perRequest;
    const api = await scrape();
    const delta = (after: Sample[], before: Sample[], name: string, labels: Record<string, string> = {}) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);

    expect(
      delta(api, api0, 'cdp_http_requests_total', { method: 'POST', route: '/v3/events', status: '202' }),
    ).toBe(requests);
    expect(delta(api, api0, 'cdp_http_request_duration_seconds_count', { route: '/v3/events' })).toBe(
      requests,
    );
    expect(delta(api, api0, 'cdp_records_accepted_total', { kind: 'events' })).toBe(sent);

    // The processor settles them in its own time: poll its counters until every record is stored.
    const proc = await eventually(async () => {
      const now = await scrape(processorUrl());
      expect(delta(now, proc0, 'cdp_records_stored_total', { kind: 'events' })).toBe(sent);
      return now;
    });
    expect(delta(proc, proc0, 'cdp_records_dead_lettered_total', { kind: 'events' })).toBe(0);
    expect(delta(proc, proc0, 'cdp_store_insert_rows_total', { table: 'events' })).toBe(sent);
    expect(delta(proc, proc0, 'cdp_store_insert_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThan(
      0,
    );
    expect(delta(proc, proc0, 'cdp_identity_resolve_duration_seconds_count')).toBeGreaterThan(0);
    expect(delta(proc, proc0, 'cdp_identity_resolved_records_total')).toBe(sent);
    expect(delta(proc, proc0, 'cdp_bus_message_lag_seconds_count')).toBe(requests);
    // Backlog gauges are read from the bus at scrape time; all was settled, so nothing waits.
    await eventually(async () => {
      expect(sampleValue(await scrape(processorUrl()), 'cdp_bus_backlog_messages')).toBe(0);
    });
    // Process metrics are on, and no label carries an identifier or an account.
    expect(proc.some((s) => s.name === 'process_resident_memory_bytes')).toBe(true);
    for (const s of [...api, ...proc]) {
      for (const value of Object.values(s.labels)) expect(value).not.toMatch(/m-\d|@|acc_/);
    }
  });

  it('counts export jobs by final state and the rows they wrote', async () => {
    const before = await scrape(processorUrl());
    const exported = await completedExport(p, acc.privateKey, { objects: ['events'] });
    const manifest = exported.manifest();
    const rows = manifest.files.reduce((n, f) => n + f.rows, 0);
    expect(rows).toBe(20); // the events of the first test
    const after = await eventually(async () => {
      const now = await scrape(processorUrl());
      const delta = (name: string, labels: Record<string, string> = {}) =>
        sampleValue(now, name, labels) - sampleValue(before, name, labels);
      expect(delta('cdp_export_jobs_total', { state: 'completed' })).toBe(1);
      return { now, delta };
    });
    expect(after.delta('cdp_export_rows_total')).toBe(rows);
    expect(after.delta('cdp_export_bytes_total')).toBe(manifest.files.reduce((n, f) => n + f.bytes, 0));
    expect(sampleValue(after.now, 'cdp_export_jobs_running')).toBe(0);
  });

  it('counts refusals of the rate limits, and never limits /metrics or the probes', async () => {
    const limited = await p.createAccount('metrics-limited', {});
    const set = await p
      .http()
      .patch(`/admin/v1/accounts/${limited.id}/rate-limits`)
      .set('authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ profiles: 1 });
    expect(set.status).toBe(200);
    const before = sampleValue(await scrape(), 'cdp_rate_limit_refusals_total', { family: 'profiles' });
    let refused = 0;
    for (let i = 0; i < 20; i++) {
      const res = await p
        .http()
        .get(`/v3/profiles?email=nobody${i}@x.com`)
        .set('x-api-key', limited.privateKey);
      if (res.status === 429) refused++;
    }
    expect(refused).toBeGreaterThan(0);
    const api = await scrape();
    expect(sampleValue(api, 'cdp_rate_limit_refusals_total', { family: 'profiles' }) - before).toBe(refused);
    expect(sampleValue(api, 'cdp_http_requests_total', { route: '/v3/profiles', status: '429' })).toBe(
      refused,
    );

    for (let i = 0; i < 30; i++) {
      expect((await p.http().get('/metrics')).status).toBe(200);
      expect((await p.http().get('/health/live')).status).toBe(200);
    }
  });

  it('answers the probes without a key: live, and ready with every driver', async () => {
    const live = await p.http().get('/health/live');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ live: true });
    const ready = await p.http().get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ ready: true, drivers: { bus: { ready: true } } });
    const base = processorUrl();
    if (base) {
      expect((await fetch(`${base}/health/live`)).status).toBe(200);
      expect((await fetch(`${base}/health/ready`)).status).toBe(200);
    }
  });

  it('counts dead letters by kind, and the bus reports how many it holds', async () => {
    const poisoned = await p.createAccount('metrics-poisoned');
    // The processor rejects this account's messages the way it rejects a value the store cannot parse.
    const rule = `processor.message[${poisoned.id}]:reject~3600000`;
    if (p instanceof EmbeddedPlatform) configureFaults(parseFaults(rule));
    else {
      await p.stopProcessor();
      await p.startProcessor({ CDP_TEST_FAULTS: rule });
    }
    try {
      const before = await scrape(processorUrl());
      for (let r = 0; r < 2; r++) {
        const res = await postWithKey(
          p,
          poisoned.publicKey,
          '/v3/events',
          [1, 2, 3].map((i) => ({ type: 'poison', identifiers: { vuid: `p-${r}-${i}` } })),
        );
        expect(res.status).toBe(202);
      }
      const after = await eventually(async () => {
        const now = await scrape(processorUrl());
        expect(
          sampleValue(now, 'cdp_records_dead_lettered_total', { kind: 'events' }) -
            sampleValue(before, 'cdp_records_dead_lettered_total', { kind: 'events' }),
        ).toBe(6);
        expect(sampleValue(now, 'cdp_bus_dead_letters')).toBe(2);
        return now;
      });
      expect(
        sampleValue(after, 'cdp_bus_dead_lettered_messages_total', { kind: 'events' }) -
          sampleValue(before, 'cdp_bus_dead_lettered_messages_total', { kind: 'events' }),
      ).toBe(2);
    } finally {
      if (p instanceof EmbeddedPlatform) configureFaults([]);
      else {
        await p.stopProcessor();
        await p.startProcessor();
      }
    }
  });

  // Scaled out only: the loader is a role of its own there; embedded, its metrics are the one process's.
  if (_wiring === 'scaled out') {
    it('serves /metrics and the probes from every role, the loader included', async () => {
      const scaled = p as ScaledPlatform;
      const loader = await scaled.startLoader();
      for (const base of [scaled.api.baseUrl, processorUrl()!, loader.baseUrl]) {
        const names = new Set((await scrape(base)).map((s) => s.name));
        expect(names).toContain('process_resident_memory_bytes');
        expect((await fetch(`${base}/health/live`)).status).toBe(200);
        expect((await fetch(`${base}/health/ready`)).status).toBe(200);
      }
    });
  }

  it('shows the progress of bulk files: files by final state, records read, loaded, invalid, dropped, bytes', async () => {
    // The loader's own port scaled out (started by the case above), the one process embedded.
    const loaderUrl =
      p instanceof ScaledPlatform ? (p.loaders[0] ?? (await p.startLoader())).baseUrl : undefined;
    const before = await scrape(loaderUrl);
    // 201 records: one invalid (under 1%: loaded), two with a value in a column events do not have.
    const good = [
      'type,email,page,shoe_colour',
      ...Array.from({ length: 198 }, (_, i) => `pageview,bulk${i}@x.com,/bulk,`),
      'pageview,red@x.com,/bulk,red',
      'pageview,blue@x.com,/bulk,blue',
      'pageview,not-an-email,/bulk,',
    ].join('\n');
    // Half invalid: rejected, nothing published.
    const bad = ['type,email,page', 'pageview,ok@x.com,/bad', 'pageview,not-an-email,/bad'].join('\n');
    const files = { 'svc_events_metrics.csv': `${good}\n`, 'svc_events_metrics_bad.csv': `${bad}\n` };
    const incoming =
      p instanceof ScaledPlatform ? join(p.dataDir, 'buckets', 'incoming') : p.config.buckets.incoming;
    mkdirSync(join(incoming, acc.publicKey), { recursive: true });
    for (const [name, body] of Object.entries(files)) {
      // A local upload lands by rename: the loader never sees half a file.
      const partial = join(incoming, `..`, `${name}.partial`);
      writeFileSync(partial, body);
      renameSync(partial, join(incoming, acc.publicKey, name));
    }
    await eventually(
      async () => {
        const res = await p.http().get('/v3/activity?limit=100').set('x-api-key', acc.privateKey);
        const states = (res.body.activity as { name: string; state: string }[]).map(
          (r) => `${r.name}:${r.state}`,
        );
        expect(states).toEqual(
          expect.arrayContaining(['svc_events_metrics.csv:completed', 'svc_events_metrics_bad.csv:rejected']),
        );
      },
      30_000,
      100,
    );
    const delta = (now: Sample[], name: string, labels: Record<string, string> = {}) =>
      sampleValue(now, name, labels) - sampleValue(before, name, labels);
    const events = { data_type: 'events' };
    const after = await eventually(async () => {
      const now = await scrape(loaderUrl);
      expect(delta(now, 'cdp_bulk_files_total', { state: 'completed' })).toBe(1);
      expect(delta(now, 'cdp_bulk_files_total', { state: 'rejected' })).toBe(1);
      return now;
    });
    expect(delta(after, 'cdp_bulk_files_total', { state: 'failed' })).toBe(0);
    expect(sampleValue(after, 'cdp_bulk_files_running')).toBe(0);
    expect(delta(after, 'cdp_bulk_records_read_total', events)).toBe(201 + 2);
    expect(delta(after, 'cdp_bulk_records_loaded_total', events)).toBe(200);
    expect(delta(after, 'cdp_bulk_records_invalid_total', events)).toBe(1 + 1);
    expect(delta(after, 'cdp_bulk_records_dropped_total', events)).toBe(2);
    expect(delta(after, 'cdp_bulk_bytes_read_total', events)).toBe(
      Object.values(files).reduce((n, body) => n + Buffer.byteLength(body), 0),
    );
  });

  it('lists /metrics and the probes in the OpenAPI document', async () => {
    const doc = await p.http().get('/openapi.json');
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/metrics', '/health', '/health/live', '/health/ready']),
    );
  });
});

// One wiring: it closes a driver of the test's own process (the embedded bus) to make it not ready.
describe('health probes when a driver is not ready (embedded)', () => {
  it('keeps /health/live at 200 and answers 503 on /health/ready and /health', async () => {
    const p = await EmbeddedPlatform.start();
    try {
      // The embedded bus reports not ready once closed, as it does when the process is shutting down.
      await p.app.get(EventBus).close();
      expect((await p.http().get('/health/live')).status).toBe(200);
      const ready = await p.http().get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ ready: false, drivers: { bus: { ready: false } } });
      const health = await p.http().get('/health');
      expect(health.status).toBe(503);
      expect(health.body).toMatchObject({ live: true, ready: false });
    } finally {
      await p.close();
    }
  });
});
