import Fastify from 'fastify';
import { observeHttp } from './http-metrics.js';
import { Metrics } from './metrics.js';
import { parseExposition, sampleValue } from './exposition.js';

async function scrape(metrics: Metrics) {
  return parseExposition(await metrics.exposition());
}

describe('Metrics', () => {
  it('keeps a registry per instance: two apps in one process count apart', async () => {
    const a = new Metrics({ defaultMetrics: false });
    const b = new Metrics({ defaultMetrics: false });
    a.recordsAccepted.inc({ kind: 'events' }, 3);
    b.recordsAccepted.inc({ kind: 'events' }, 5);
    expect(sampleValue(await scrape(a), 'cdp_records_accepted_total', { kind: 'events' })).toBe(3);
    expect(sampleValue(await scrape(b), 'cdp_records_accepted_total', { kind: 'events' })).toBe(5);
  });

  it('exposes the process metrics (CPU, memory, event-loop lag) by default', async () => {
    const samples = await scrape(new Metrics());
    const names = new Set(samples.map((s) => s.name));
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(names).toContain(name);
    }
  });

  it('counts dead letters by kind, messages and records', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.deadLettered('events', 4);
    metrics.deadLettered('events', 0);
    const samples = await scrape(metrics);
    expect(sampleValue(samples, 'cdp_bus_dead_lettered_messages_total', { kind: 'events' })).toBe(2);
    expect(sampleValue(samples, 'cdp_records_dead_lettered_total', { kind: 'events' })).toBe(4);
  });

  it("reads the bus's backlog at scrape time, at most once a second, keeping the last value on failure", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    let reads = 0;
    let fail = false;
    metrics.watchBus(() => {
      reads++;
      if (fail) return Promise.reject(new Error('bus away'));
      return Promise.resolve({ pending: 7, inFlight: 2, bytes: 1024, deadLetters: 1 });
    });
    const samples = await scrape(metrics);
    expect(sampleValue(samples, 'cdp_bus_backlog_messages')).toBe(7);
    expect(sampleValue(samples, 'cdp_bus_in_flight_messages')).toBe(2);
    expect(sampleValue(samples, 'cdp_bus_backlog_bytes')).toBe(1024);
    expect(sampleValue(samples, 'cdp_bus_dead_letters')).toBe(1);
    await scrape(metrics);
    expect(reads).toBe(1); // four gauges, two scrapes: one read
    fail = true;
    (metrics as unknown as { backlogCache: unknown }).backlogCache = undefined; // the second has passed
    expect(sampleValue(await scrape(metrics), 'cdp_bus_backlog_messages')).toBe(7);
    expect(reads).toBe(2);
  });

  it('labels HTTP requests with the route pattern, never the raw URL', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const fastify = Fastify();
    observeHttp(fastify, metrics);
    fastify.get('/v3/profiles/:id', (_req, reply) => reply.status(200).send({}));
    fastify.post('/v3/events', (_req, reply) => reply.status(202).send({}));
    // Over a socket: Jest's ESM mode cannot load fastify.inject's request builder.
    const base = await fastify.listen({ port: 0, host: '127.0.0.1' });
    await fetch(`${base}/v3/profiles/alice@example.com`);
    await fetch(`${base}/v3/profiles/bob`);
    await fetch(`${base}/v3/events`, { method: 'POST' });
    await fetch(`${base}/nowhere/carol`);
    await fastify.close();

    const samples = await scrape(metrics);
    const requests = (labels: Record<string, string>) =>
      sampleValue(samples, 'cdp_http_requests_total', labels);
    expect(requests({ method: 'GET', route: '/v3/profiles/:id', status: '200' })).toBe(2);
    expect(requests({ method: 'POST', route: '/v3/events', status: '202' })).toBe(1);
    expect(requests({ route: 'unmatched', status: '404' })).toBe(1);
    expect(sampleValue(samples, 'cdp_http_request_duration_seconds_count', { route: '/v3/events' })).toBe(1);
    const text = await metrics.exposition();
    expect(text).not.toMatch(/alice|bob|carol/);
  });
});

describe('parseExposition', () => {
  it('reads names, escaped label values and special values', () => {
    const samples = parseExposition(
      [
        '# HELP x_total a help',
        '# TYPE x_total counter',
        'x_total{route="/a/:id",note="say \\"hi\\"\\n"} 3',
        'y_bucket{le="+Inf"} +Inf',
        'z 1.5e3',
      ].join('\n'),
    );
    expect(samples).toEqual([
      { name: 'x_total', labels: { route: '/a/:id', note: 'say "hi"\n' }, value: 3 },
      { name: 'y_bucket', labels: { le: '+Inf' }, value: Number.POSITIVE_INFINITY },
      { name: 'z', labels: {}, value: 1500 },
    ]);
  });
});
