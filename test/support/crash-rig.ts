import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseStore } from '@cdp/store';
import { ChildApp } from './child-process.js';
import { ADMIN_TOKEN, TEST_ACCOUNT_RATES, type TestAccount } from './embedded.js';
import { eventually } from './eventually.js';
import { readChdbStore, ScaledPlatform } from './scaled.js';

/**
 * A wiring whose processing side a test can start with fault rules (`CDP_TEST_FAULTS`), see die, and
 * start again: the embedded server as one child process, or the scaled processor beside its API.
 */
export interface CrashRig {
  readonly name: string;
  account: TestAccount;
  /** The API's address (the embedded server's changes with each start). */
  url(): string;
  /** Starts the processing side (the whole server when embedded) with these fault rules, if any. */
  start(faults?: string): Promise<void>;
  /** Waits for the processing side to die by a fault; false if it still runs after `ms`. */
  died(ms: number): Promise<boolean>;
  /** Stops the processing side cleanly. */
  stop(): Promise<void>;
  /** Messages the bus still holds (NaN while the API is away). */
  pending(): Promise<number>;
  /** Reads the store with the processing side stopped (chDB has one owner), then starts it again. */
  withStore<T>(read: (store: ClickHouseStore) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

async function healthPending(url: string): Promise<number> {
  try {
    const body = (await (await fetch(`${url}/health`)).json()) as { drivers: { bus: { detail?: string } } };
    return Number(/^(\d+)/.exec(body.drivers.bus.detail ?? '')?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

async function diedWithin(app: ChildApp, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const exit = app.exited().then(() => true);
  const result = await Promise.race([exit, timeout]);
  clearTimeout(timer);
  return result;
}

async function adminAccount(url: string, name: string): Promise<TestAccount> {
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
  const res = await fetch(`${url}/admin/v1/accounts`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name }),
  });
  const body = (await res.json()) as { account: { id: string }; public_key: string; private_key: string };
  if (res.status !== 201) throw new Error(`account creation failed: ${res.status}`);
  const set = await fetch(`${url}/admin/v1/accounts/${body.account.id}/rate-limits`, {
    method: 'PATCH',
    headers,
    body: JSON.stringify(TEST_ACCOUNT_RATES),
  });
  if (set.status !== 200) throw new Error(`setting rate limits failed: ${set.status}`);
  return { id: body.account.id, publicKey: body.public_key, privateKey: body.private_key };
}

export class EmbeddedRig implements CrashRig {
  readonly name = 'embedded';
  account!: TestAccount;
  private app: ChildApp | undefined;
  readonly dataDir = mkdtempSync(join(tmpdir(), 'cdp-crash-'));

  static async create(): Promise<EmbeddedRig> {
    const rig = new EmbeddedRig();
    await rig.start();
    rig.account = await adminAccount(rig.url(), 'crash');
    return rig;
  }

  url(): string {
    return this.app!.baseUrl;
  }

  async start(faults?: string): Promise<void> {
    this.app = await ChildApp.start('apps/cdp/src/main.js', {
      CDP_DATA_DIR: this.dataDir,
      CDP_ADMIN_TOKEN: ADMIN_TOKEN,
      ...(faults ? { CDP_TEST_FAULTS: faults } : {}),
    });
  }

  died(ms: number): Promise<boolean> {
    return diedWithin(this.app!, ms);
  }

  async stop(): Promise<void> {
    await this.app?.kill('SIGTERM');
  }

  pending(): Promise<number> {
    return healthPending(this.url());
  }

  async withStore<T>(read: (store: ClickHouseStore) => Promise<T>): Promise<T> {
    await this.stop();
    try {
      return await readChdbStore(this.dataDir, read);
    } finally {
      await this.start();
    }
  }

  close(): Promise<void> {
    return this.stop();
  }
}

export class ScaledRig implements CrashRig {
  readonly name = 'scaled';
  account!: TestAccount;

  private constructor(readonly platform: ScaledPlatform) {}

  static async create(): Promise<ScaledRig> {
    // A killed processor's messages come back after the ack wait: short here, so each restart is quick.
    const rig = new ScaledRig(await ScaledPlatform.start({ CDP_NATS_ACK_WAIT_MS: '1500' }));
    rig.account = await rig.platform.createAccount('crash');
    return rig;
  }

  url(): string {
    return this.platform.api.baseUrl;
  }

  async start(faults?: string): Promise<void> {
    await this.platform.startProcessor(faults ? { CDP_TEST_FAULTS: faults } : {});
  }

  async died(ms: number): Promise<boolean> {
    const died = await diedWithin(this.platform.processor!, ms);
    if (died) this.platform.processor = undefined;
    return died;
  }

  stop(): Promise<void> {
    return this.platform.stopProcessor();
  }

  pending(): Promise<number> {
    return this.platform.pending();
  }

  withStore<T>(read: (store: ClickHouseStore) => Promise<T>): Promise<T> {
    return this.platform.withStore(read);
  }

  close(): Promise<void> {
    return this.platform.close();
  }
}

/** Waits until the bus holds nothing: every acknowledged request has been processed. */
export async function drained(rig: CrashRig, ms = 60_000): Promise<void> {
  await eventually(async () => (await rig.pending()) === 0, ms);
}

/** POSTs JSON; the status, or 0 when the server went away before answering (nothing acknowledged). */
export async function post(rig: CrashRig, path: string, body: unknown, key: string): Promise<number> {
  try {
    const res = await fetch(`${rig.url()}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** GETs JSON with the private key. */
export async function get(rig: CrashRig, path: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${rig.url()}${path}`, { headers: { 'x-api-key': rig.account.privateKey } });
  return { status: res.status, body: res.status === 200 ? await res.json() : await res.text() };
}
