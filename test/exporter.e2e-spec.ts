import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@cdp/config';
import { parseExposition, sampleValue, type Sample } from '@cdp/metrics';
import { ChildApp } from './support/child-process.js';
import { EngineProcess } from './support/engines.js';
import { eventually } from './support/eventually.js';
import { ADMIN_TOKEN } from './support/embedded.js';

/**
 * apps/exporter, the role that runs exports beside a ClickHouse server (CDP_STORE=clickhouse), as an
 * operator deploys it: its probes and its /metrics. Like the HTTP-transport contract, it runs when
 * CLICKHOUSE_URL names a server, which CI always does (.ci/run starts Debian's clickhouse-server): there
 * a server that is missing fails the suite. That server is 18.16, too old for the account tables' DDL
 * (skipping indexes, `ADD COLUMN IF NOT EXISTS`, Bool): an export job cannot complete on it, so the job
 * case checks that the counters agree with whatever state the job ended in, not that it completed.
 */
const { clickhouse } = loadConfig();
const describeIfServer = clickhouse.named ? describe : describe.skip;

// One wiring: apps/exporter runs only with a ClickHouse server (CDP_STORE=clickhouse).
describeIfServer('apps/exporter on a ClickHouse server', () => {
  let nats: EngineProcess;
  let redis: EngineProcess;
  let api: ChildApp;
  let exporter: ChildApp;

  beforeAll(async () => {
    nats = await EngineProcess.start('nats');
    redis = await EngineProcess.start('redis');
    const env = {
      CDP_BUS: 'nats',
      CDP_IDENTITY: 'redis',
      CDP_STORE: 'clickhouse',
      CLICKHOUSE_URL: clickhouse.url,
      NATS_URL: nats.url,
      REDIS_URL: redis.url,
      CDP_DATA_DIR: mkdtempSync(join(tmpdir(), 'cdp-exporter-')),
      CDP_ADMIN_TOKEN: ADMIN_TOKEN,
      CDP_EXPORT_POLL_MS: '100',
    };
    // The API records the job in the shared metadata; the exporter, and nothing else, runs it.
    api = await ChildApp.start('apps/api/src/main.js', env);
    exporter = await ChildApp.start('apps/exporter/src/main.js', env);
  }, 90_000);
  afterAll(async () => {
    await exporter?.kill('SIGTERM');
    await api?.kill('SIGTERM');
    await nats?.down();
    await redis?.down();
  }, 30_000);

  async function scrape(): Promise<{ text: string; samples: Sample[] }> {
    const res = await fetch(`${exporter.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    return { text, samples: parseExposition(text) };
  }

  it('is live, and ready once the ClickHouse server answers', async () => {
    const live = await fetch(`${exporter.baseUrl}/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ live: true });
    const ready = await fetch(`${exporter.baseUrl}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      ready: true,
      drivers: { store: { ready: true }, bus: { ready: true }, metadata: { ready: true } },
    });
  });

  it('serves /metrics with the export and store families, and the process metrics', async () => {
    const { text, samples } = await scrape();
    for (const [name, type] of [
      ['cdp_export_jobs_total', 'counter'],
      ['cdp_export_jobs_running', 'gauge'],
      ['cdp_export_rows_total', 'counter'],
      ['cdp_export_bytes_total', 'counter'],
      ['cdp_store_insert_rows_total', 'counter'],
      ['cdp_store_insert_duration_seconds', 'histogram'],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}\n`);
    }
    expect(sampleValue(samples, 'cdp_export_jobs_running')).toBe(0);
    expect(samples.some((s) => s.name === 'process_resident_memory_bytes')).toBe(true);
  });

  it('counts a job it ran by the state the job ended in, with none left running', async () => {
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const created = await fetch(`${api.baseUrl}/admin/v1/accounts`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'exporter' }),
    });
    expect(created.status).toBe(201);
    const { private_key: key } = (await created.json()) as { private_key: string };
    const before = (await scrape()).samples;
    const requested = await fetch(`${api.baseUrl}/v3/exports`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ objects: ['events'] }),
    });
    expect(requested.status).toBe(202);
    const { id } = (await requested.json()) as { id: string };
    const record = await eventually(
      async () => {
        const res = await fetch(`${api.baseUrl}/v3/exports/${id}`, { headers: { 'x-api-key': key } });
        const body = (await res.json()) as { state: string; errors?: { object: string }[] };
        expect(['completed', 'completed_with_errors']).toContain(body.state);
        return body;
      },
      30_000,
      100,
    );
    const after = await eventually(async () => {
      const { samples } = await scrape();
      const finished = (state: string) =>
        sampleValue(samples, 'cdp_export_jobs_total', { state }) -
        sampleValue(before, 'cdp_export_jobs_total', { state });
      expect(finished(record.state)).toBe(1);
      return samples;
    });
    expect(sampleValue(after, 'cdp_export_jobs_running')).toBe(0);
    // On 18.16 the account's tables cannot be created: the job ends with the object it could not export.
    for (const error of record.errors ?? []) expect(error.object).toBe('events');
  });
});
