import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { EmbeddedPlatform, ADMIN_TOKEN, type TestAccount } from './support/embedded.js';
import { ScaledPlatform } from './support/scaled.js';
import { readStores, type AccountsQuery } from './support/store-checks.js';
import type { Platform } from './support/wirings.js';
import { envelopeProblem, messageOf, sendAll, type FuzzResponse } from './support/fuzz-runner.js';
import {
  documentGaps,
  generate,
  operationsOf,
  type FuzzFixtures,
  type FuzzRequest,
  type OpenApiDoc,
} from './support/openapi-fuzz.js';
import { postWithKey } from './support/api-calls.js';

/**
 * Hostile input generated from the OpenAPI document (issue "A 202 is a promise"): at least 20,000
 * requests over every route of the embedded platform (and a sample against the scaled-out API),
 * valid-ish ones and broken variants. No answer may be a 5xx, every 4xx is the spec's envelope, the
 * memory of the process serving the API stays bounded, nothing of a refused request reaches the store,
 * and nothing accepted is dead-lettered.
 *
 * Reproduce a run with CDP_FUZZ_SEED=<printed seed>; CDP_FUZZ_REQUESTS changes the embedded total.
 */
const SEED = Number(process.env.CDP_FUZZ_SEED ?? 20261123);
const TOTAL = Number(process.env.CDP_FUZZ_REQUESTS ?? 20_000);
const SCALED_TOTAL = Math.ceil(TOTAL / 5);
const CONCURRENCY = 8;
const MB = 1024 * 1024;
const RSS_HEADROOM_MB = 400;

/** Resident memory of the process serving the API: this one (embedded), or the API child (scaled). */
function apiRss(p: Platform): number {
  if (p instanceof EmbeddedPlatform) return process.memoryUsage().rss;
  const status = readFileSync(`/proc/${p.api.proc.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

function apiPort(p: Platform): number {
  if (p instanceof EmbeddedPlatform) return (p.app.getHttpServer().address() as { port: number }).port;
  return Number(new URL(p.api.baseUrl).port);
}

const WIRINGS = [
  [
    'embedded',
    TOTAL,
    async (): Promise<Platform> => {
      const p = await EmbeddedPlatform.start();
      await p.app.listen({ port: 0, host: '127.0.0.1' });
      return p;
    },
  ],
  ['scaled out', SCALED_TOTAL, (): Promise<Platform> => ScaledPlatform.start()],
] as const;

describe.each(WIRINGS)('hostile input generated from the OpenAPI document (%s)', (_wiring, total, start) => {
  let p: Platform;
  let main: TestAccount;
  let limited: TestAccount;
  let port: number;

  beforeAll(async () => {
    p = await start();
    port = apiPort(p);
    main = await p.createAccount('fuzz-main');
    limited = await p.createAccount('fuzz-default-rates', {});
  }, 60_000);
  afterAll(() => p?.close(), 60_000);

  /** Things worth naming in valid requests: a list, a custom object, an export, an account to mutate. */
  async function fixtures(): Promise<FuzzFixtures> {
    const http = () => p.http();
    const list = await http().post('/v3/lists').set('x-api-key', main.privateKey).send({ name: 'Fuzz list' });
    expect(list.status).toBe(201);
    const object = await http()
      .post('/v3/schema/objects')
      .set('x-api-key', main.privateKey)
      .send({
        name: 'gadgets',
        display_name: 'Gadgets',
        fields: [
          { name: 'gadget_id', type: 'string', display_name: 'Gadget id', primary: true },
          { name: 'label', type: 'string', display_name: 'Label' },
          { name: 'weight', type: 'number', display_name: 'Weight' },
        ],
      });
    expect(object.status).toBe(201);
    const exported = await http()
      .post('/v3/exports')
      .set('x-api-key', main.privateKey)
      .send({ objects: ['products'] });
    expect(exported.status).toBe(202);
    // Admin mutations (key rotation, revocation, rate changes) go to an account of their own.
    const target = await p.createAccount('fuzz-admin-target');
    const view = await http()
      .get(`/admin/v1/accounts/${target.id}`)
      .set('authorization', `Bearer ${ADMIN_TOKEN}`);
    return {
      adminToken: ADMIN_TOKEN,
      main,
      limited,
      listIds: [list.body.created.list_id as string],
      objectNames: ['customers', 'events', 'products', 'orders', 'gadgets'],
      pathValues: {
        '/admin/v1/accounts:id': [target.id],
        keyId: (view.body.keys as { id: string }[]).map((k) => k.id),
        '/v3/exports:id': [exported.body.id as string],
        object: ['gadgets', 'customers', 'products', 'events', 'orders'],
        field: ['gadget_id', 'label', 'email', 'first_name'],
        relation: ['parent', 'products'],
        list_id: [list.body.created.list_id as string, 'svc_all'],
      },
    };
  }

  it(`answers ${total} generated requests without a 5xx, in the envelope, in bounded memory, storing nothing refused`, async () => {
    const doc = (await p.http().get('/openapi.json')).body as OpenApiDoc;
    const operations = operationsOf(doc);
    const gaps = documentGaps(doc);
    if (gaps.length) console.log(`openapi: routes the document leaves undescribed:\n  ${gaps.join('\n  ')}`);
    expect(gaps).toEqual([]);

    const fx = await fixtures();
    const perRoute = Math.ceil(total / operations.length);
    const requests = generate(doc, fx, SEED, perRoute);
    console.log(
      `fuzz: seed ${SEED} (CDP_FUZZ_SEED), ${requests.length} requests, ${perRoute} per route over ${operations.length} routes`,
    );

    const statuses = new Map<string, Map<number, number>>();
    const failures = new Map<string, { count: number; example: FuzzRequest }>();
    const refusedTokens = new Set<string>();
    const acceptedTokens = new Set<string>();
    const fail = (key: string, req: FuzzRequest) => {
      const f = failures.get(key);
      if (f) f.count++;
      else failures.set(key, { count: 1, example: req });
    };
    const onResponse = (req: FuzzRequest, res: FuzzResponse) => {
      const byStatus = statuses.get(req.route) ?? new Map<number, number>();
      byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
      statuses.set(req.route, byStatus);
      if (res.error) return fail(`${req.route} transport: ${res.error}`, req);
      if (res.status >= 500) return fail(`${req.route} ${res.status}: ${messageOf(res)}`, req);
      if (!res.headers['z-request-id']) fail(`${req.route} ${res.status}: no z-request-id`, req);
      if (res.status >= 400) {
        refusedTokens.add(req.token);
        const problem = envelopeProblem(res);
        if (problem) fail(`${req.route} ${res.status}: not the envelope (${problem})`, req);
      } else acceptedTokens.add(req.token);
    };

    const rss = { start: apiRss(p), peak: 0 };
    const sampler = setInterval(() => (rss.peak = Math.max(rss.peak, apiRss(p))), 100);
    const started = Date.now();
    try {
      await sendAll(port, requests, CONCURRENCY, onResponse);
    } finally {
      clearInterval(sampler);
    }
    rss.peak = Math.max(rss.peak, apiRss(p));
    const seconds = (Date.now() - started) / 1000;

    const seen = new Map<number, number>();
    for (const byStatus of statuses.values())
      for (const [s, n] of byStatus) seen.set(s, (seen.get(s) ?? 0) + n);
    console.log(
      `fuzz: ${requests.length} requests in ${seconds.toFixed(1)} s; statuses ${[...seen]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s}×${n}`)
        .join(' ')}; RSS start ${(rss.start / MB).toFixed(0)} MB, peak ${(rss.peak / MB).toFixed(0)} MB\n` +
        [...statuses]
          .map(([route, byStatus]) => `  ${route}: ${[...byStatus].map(([s, n]) => `${s}×${n}`).join(' ')}`)
          .join('\n'),
    );

    const report = [...failures]
      .sort((a, b) => b[1].count - a[1].count)
      .map(
        ([key, { count, example: r }]) =>
          `${count}× ${key}\n    e.g. #${r.seq} ${r.variant}: ${r.method} ${r.url.slice(0, 120)} ${JSON.stringify(r.headers).slice(0, 160)} ${r.body?.subarray(0, 160).toString('utf8') ?? ''}`,
      );
    expect(report).toEqual([]);
    for (const route of operations.map((o) => o.route)) expect(statuses.get(route)).toBeDefined();
    expect(rss.peak).toBeLessThan(rss.start + RSS_HEADROOM_MB * MB);

    // Nothing refused is stored: once the processor has drained (a marker sent last has landed),
    // no row of the accounts holds the token of a refused request.
    const marker = `drain-${SEED}`;
    for (const account of [main, limited]) {
      const sent = await postWithKey(p, account.publicKey, '/v3/events', {
        type: 'drain',
        identifiers: { vuid: marker },
      });
      expect(sent.status).toBe(202);
    }
    const stored = await drainedTokens([main.id, limited.id], marker);
    // And nothing accepted was given up: a message the processor cannot store goes, after its retries,
    // to the bus's dead-letter file (embedded) or stream (scaled out): a 202 broken.
    expect((await deadLetters()).map((line) => line.slice(0, 600))).toEqual([]);
    const leaked = [...stored].filter((t) => refusedTokens.has(t));
    console.log(
      `fuzz: store holds tokens of ${stored.size} requests (${[...stored].filter((t) => acceptedTokens.has(t)).length} accepted); ${refusedTokens.size} requests refused`,
    );
    expect(stored.size).toBeGreaterThan(0);
    expect(
      leaked.map((t) => requests[Number(t.slice(2, -1))]).map((r) => `#${r!.seq} ${r!.route} ${r!.variant}`),
    ).toEqual([]);
  }, 600_000);

  it('answers what the router and the HTTP parser refuse in the envelope, and a keep-alive client loses nothing', async () => {
    const get = (url: string, key: string): FuzzRequest => ({
      seq: 0,
      route: `GET ${url}`,
      variant: 'fixed',
      method: 'GET',
      url,
      headers: { 'x-api-key': key },
      token: '',
    });
    const requests = [
      get('/v3/schema/objects/%ZZ', main.privateKey), // not percent-decodable
      get(`/v3/schema/objects/${'x'.repeat(101)}`, main.privateKey), // a path parameter over 100 characters
      get('/v3/lists', 'k'.repeat(20_000)), // headers over Node's 16 KiB
      get('/v3/lists', main.publicKey),
    ];
    const answers: { status: number; requestId: boolean; problem?: string }[] = [];
    // One socket at a time: the request after the 431 reaches the server only if the 431 said close.
    await sendAll(port, requests, 1, (_req, res) =>
      answers.push({
        status: res.status,
        requestId: typeof res.headers['z-request-id'] === 'string',
        problem: res.error ?? (res.status >= 400 ? envelopeProblem(res) : undefined),
      }),
    );
    expect(answers).toEqual([
      { status: 400, requestId: true, problem: undefined },
      { status: 414, requestId: true, problem: undefined },
      { status: 431, requestId: true, problem: undefined },
      { status: 200, requestId: true, problem: undefined },
    ]);
  });

  /**
   * Every request token in any table of the accounts' databases, once the marker has landed in each.
   * Scaled out, chDB belongs to the processor: wait for the stream to empty, then read with it stopped.
   */
  async function drainedTokens(accounts: string[], marker: string): Promise<Set<string>> {
    const tokens = new Set<string>();
    const scan = async (query: AccountsQuery) => {
      for (const account of accounts) {
        const [landed] = await query<{ n: string | number }>(
          account,
          `SELECT count() AS n FROM {db}.events WHERE identifiers['vuid'] = {m:String}`,
          { m: marker },
        );
        if (Number(landed?.n) !== 1) return false;
      }
      for (const account of accounts) {
        const tables = await query<{ name: string }>(
          account,
          "SELECT name FROM system.tables WHERE database = '{db}' AND engine NOT LIKE '%View%'",
        );
        for (const { name } of tables) {
          // The rejection counts keep a refused record's type and reason by design (what the console's
          // rejected chart is drawn from): counts of refusals, not the refused records.
          if (name === 'ingest_rejections') continue;
          const rows = await query<Record<string, unknown>>(account, `SELECT * FROM {db}.\`${name}\``);
          for (const row of rows) for (const m of JSON.stringify(row).matchAll(/fz\d+k/g)) tokens.add(m[0]);
        }
      }
      return true;
    };
    // Polled until the marker sent last is in every account's store.
    await readStores(p, scan, { timeoutMs: 120_000, everyMs: 200 });
    return tokens;
  }

  /** What the bus gave up on: the local log's dead-letter file; JetStream's dead-letter stream. */
  async function deadLetters(): Promise<string[]> {
    if (p instanceof EmbeddedPlatform) {
      const file = join(p.config.dataDir, 'bus', 'dead-letter.log');
      return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
    }
    const nc = await connect({ servers: p.nats.url });
    try {
      const info = await (await jetstreamManager(nc)).streams.info('CDP_DEAD_LETTER');
      return info.state.messages ? [`${info.state.messages} message(s) in CDP_DEAD_LETTER`] : [];
    } finally {
      await nc.close();
    }
  }
});
