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

  async createAccount(name = 'test'): Promise<TestAccount> {
    const res = await this.http()
      .post('/admin/v1/accounts')
      .set('authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ name });
    if (res.status !== 201)
      throw new Error(`account creation failed: ${res.status} ${JSON.stringify(res.body)}`);
    return { id: res.body.account.id, publicKey: res.body.public_key, privateKey: res.body.private_key };
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
