import { mkdtempSync, rmSync } from 'node:fs';
import request from 'supertest';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChdbTransport } from '@cdp/store/chdb';
import { ClickHouseStore } from '@cdp/store';
import { ChildApp } from './child-process.js';
import { ADMIN_TOKEN, TEST_ACCOUNT_RATES, type TestAccount, type TestRates } from './embedded.js';
import { EngineProcess } from './engines.js';

/**
 * The scaled-out wiring: the API and the processor as separate child processes (built apps) on a
 * NATS server and a Redis of the test's own, the store on chDB owned by the processor.
 */
export class ScaledPlatform {
  api!: ChildApp;
  processor: ChildApp | undefined;
  /** Bulk-file loaders (apps/loader) a suite started with startLoader. */
  readonly loaders: ChildApp[] = [];

  private constructor(
    readonly nats: EngineProcess,
    readonly redis: EngineProcess,
    readonly dataDir: string,
    private readonly extraEnv: Record<string, string> = {},
  ) {}

  /** `env` adds settings for both processes (e.g. `CDP_EXPORT_ROWS_PER_FILE`). */
  static async start(env: Record<string, string> = {}): Promise<ScaledPlatform> {
    const p = new ScaledPlatform(
      await EngineProcess.start('nats'),
      await EngineProcess.start('redis'),
      mkdtempSync(join(tmpdir(), 'cdp-scaled-')),
      env,
    );
    await p.startProcessor();
    p.api = await ChildApp.start('apps/api/src/main.js', p.env());
    return p;
  }

  env(): Record<string, string> {
    return {
      CDP_BUS: 'nats',
      CDP_IDENTITY: 'redis',
      CDP_STORE: 'chdb',
      NATS_URL: this.nats.url,
      REDIS_URL: this.redis.url,
      CDP_DATA_DIR: this.dataDir,
      CDP_ADMIN_TOKEN: ADMIN_TOKEN,
      ...this.extraEnv,
    };
  }

  /** `env` adds settings for this start of the processor only (e.g. `CDP_TEST_FAULTS`). */
  async startProcessor(env: Record<string, string> = {}): Promise<void> {
    this.processor = await ChildApp.start('apps/processor/src/main.js', { ...this.env(), ...env });
  }

  /** Starts one more apps/loader replica; `env` adds settings for it only. */
  async startLoader(env: Record<string, string> = {}): Promise<ChildApp> {
    const loader = await ChildApp.start('apps/loader/src/main.js', { ...this.env(), ...env });
    this.loaders.push(loader);
    return loader;
  }

  async stopProcessor(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.processor?.kill(signal);
    this.processor = undefined;
  }

  /** Requests to the API process, as supertest makes them (same calls as the embedded platform). */
  http() {
    return request(this.api.baseUrl);
  }

  /** Sends raw bytes (supertest re-serialises a Buffer sent as application/json). */
  async raw(
    path: string,
    body: Buffer,
    headers: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(this.url(path), { method: 'POST', body, headers });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  url(path: string): string {
    return `${this.api.baseUrl}${path}`;
  }

  /** A new account; its rates are TEST_ACCOUNT_RATES unless the test names its own (`{}`: the defaults). */
  async createAccount(name = 'scaled', rates: TestRates = TEST_ACCOUNT_RATES): Promise<TestAccount> {
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const res = await fetch(this.url('/admin/v1/accounts'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ name }),
    });
    const body = (await res.json()) as { account: { id: string }; public_key: string; private_key: string };
    if (res.status !== 201) throw new Error(`account creation failed: ${res.status}`);
    if (Object.keys(rates).length) {
      const set = await fetch(this.url(`/admin/v1/accounts/${body.account.id}/rate-limits`), {
        method: 'PATCH',
        headers,
        body: JSON.stringify(rates),
      });
      if (set.status !== 200) throw new Error(`setting rate limits failed: ${set.status}`);
    }
    return { id: body.account.id, publicKey: body.public_key, privateKey: body.private_key };
  }

  /** Messages waiting in the ingest stream, as the API's health reports them. */
  async pending(): Promise<number> {
    const body = (await (await fetch(this.url('/health'))).json()) as {
      drivers: { bus: { detail?: string } };
    };
    return Number(/^(\d+)/.exec(body.drivers.bus.detail ?? '')?.[1] ?? NaN);
  }

  /** Reads the store with the processor stopped (chDB: one process at a time owns the directory). */
  async withStore<T>(read: (store: ClickHouseStore) => Promise<T>): Promise<T> {
    const wasRunning = this.processor !== undefined;
    await this.stopProcessor();
    try {
      return await readChdbStore(this.dataDir, read);
    } finally {
      if (wasRunning) await this.startProcessor();
    }
  }

  async close(): Promise<void> {
    await this.api?.kill('SIGTERM');
    for (const loader of this.loaders) await loader.kill('SIGTERM');
    await this.stopProcessor();
    // Nothing reads a closed platform's files: its store, buckets and engines' data go (~70 MB a platform).
    await this.nats.remove();
    await this.redis.remove();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** Opens the chDB store of a data directory whose processor is stopped, reads it and closes it again. */
export async function readChdbStore<T>(
  dataDir: string,
  read: (store: ClickHouseStore) => Promise<T>,
): Promise<T> {
  const store = new ClickHouseStore(new ChdbTransport(join(dataDir, 'store', 'chdb')));
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}
