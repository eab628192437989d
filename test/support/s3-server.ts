import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { loadConfig } from '@cdp/config';
import { S3Buckets } from '@cdp/buckets/s3';

const BUCKETS = { incoming: 'cdp-incoming', scratch: 'cdp-scratch', export: 'cdp-export' };

/** An S3-protocol server (s3rver) of a test's own on 127.0.0.1, with the platform's three buckets. */
export class S3Server {
  private readonly opened: S3Buckets[] = [];

  private constructor(
    private readonly server: S3rver,
    readonly endpoint: string,
    private readonly dir: string,
  ) {}

  static async start(): Promise<S3Server> {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-s3-'));
    const server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: dir,
      configureBuckets: Object.values(BUCKETS).map((name) => ({ name, configs: [] })),
    });
    const { port } = await server.run();
    return new S3Server(server, `http://127.0.0.1:${port}`, dir);
  }

  /** The settings that point a platform's processes at this server. */
  env(): Record<string, string> {
    return {
      CDP_BUCKETS: 's3',
      CDP_S3_ENDPOINT: this.endpoint,
      CDP_S3_ACCESS_KEY_ID: 'S3RVER',
      CDP_S3_SECRET_ACCESS_KEY: 'S3RVER',
      CDP_S3_BUCKET_INCOMING: BUCKETS.incoming,
      CDP_S3_BUCKET_SCRATCH: BUCKETS.scratch,
      CDP_S3_BUCKET_EXPORT: BUCKETS.export,
    };
  }

  /** The buckets as the platform sees them, for a test to drop and read files. */
  buckets(): S3Buckets {
    const buckets = new S3Buckets(loadConfig(this.env()).s3);
    this.opened.push(buckets);
    return buckets;
  }

  async close(): Promise<void> {
    for (const b of this.opened) b.close();
    await this.server.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
