import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { loadConfig, type AppConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { AnalyticStore } from '@cdp/store';
import { createCdpApp } from '../../apps/cdp/src/cdp.app.js';

export const ADMIN_TOKEN = 'test-admin-token';

export type TestRates = Record<string, number | 'unlimited' | null>;

/**
 * Rates of the accounts tests create: the limited families unlimited, so that a suite polling
 * `GET /v3/profiles` for an eventual result is not answered 429. The rate-limit suite passes `{}` to
 * test the spec's defaults.
 */
export const TEST_ACCOUNT_RATES: TestRates = { profiles: 'unlimited', compliance: 'unlimited' };

export interface TestAccount {
  id: string;
  publicKey: string;
  privateKey: string;
}

/** The all-in-one app in this process, on its embedded drivers, in a fresh data directory. */
export class EmbeddedPlatform {
  private constructor(
    readonly app: NestFastifyApplication,
    readonly config: AppConfig,
  ) {}

  static async start(
    env: Record<string, string> = {},
    dataDir = mkdtempSync(join(tmpdir(), 'cdp-e2e-')),
  ): Promise<EmbeddedPlatform> {
    const config = loadConfig({
      CDP_DATA_DIR: dataDir,
      CDP_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
      ...env,
    });
    const app = await createCdpApp(config, createLogger(config.logLevel));
    return new EmbeddedPlatform(app, config);
  }

  http() {
    return request(this.app.getHttpServer());
  }

  /** Sends raw bytes with fetch: supertest re-serialises a Buffer sent as application/json. */
  async raw(
    path: string,
    body: Buffer,
    headers: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const address = this.app.getHttpServer().address();
    if (!address || typeof address === 'string') await this.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = this.app.getHttpServer().address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body, headers });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** A new account; its rates are TEST_ACCOUNT_RATES unless the test names its own (`{}`: the defaults). */
  async createAccount(name = 'test', rates: TestRates = TEST_ACCOUNT_RATES): Promise<TestAccount> {
    const res = await this.http()
      .post('/admin/v1/accounts')
      .set('authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ name });
    if (res.status !== 201)
      throw new Error(`account creation failed: ${res.status} ${JSON.stringify(res.body)}`);
    const account = {
      id: res.body.account.id,
      publicKey: res.body.public_key,
      privateKey: res.body.private_key,
    };
    if (Object.keys(rates).length) {
      const set = await this.http()
        .patch(`/admin/v1/accounts/${account.id}/rate-limits`)
        .set('authorization', `Bearer ${ADMIN_TOKEN}`)
        .send(rates);
      if (set.status !== 200) throw new Error(`setting rate limits failed: ${set.status}`);
    }
    return account;
  }

  /** Rows from the account's database (`{db}` names it). */
  query<T>(account: string, sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    return this.app.get(AnalyticStore).query<T>(account, sql, params);
  }

  /** One number from the account's database, e.g. `SELECT count() AS n FROM {db}.events`. */
  async scalar(account: string, sql: string, params: Record<string, unknown> = {}): Promise<number> {
    const rows = await this.app.get(AnalyticStore).query<{ n: number | string }>(account, sql, params);
    return Number(rows[0]?.n ?? 0);
  }

  close(): Promise<void> {
    return this.app.close();
  }
}
