import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { freePort } from './support/child-process.js';
import { EngineProcess } from './support/engines.js';
import { eventually } from './support/eventually.js';

const ROOT = join(import.meta.dirname, '..');

/**
 * `npm run start:scaled` (scripts/start-scaled.js) on empty engines does what the README's first screen
 * says a first start does: it creates an account and logs its keys once.
 */
// One wiring: the script under test starts the scaled-out wiring (npm start's first start: embedded.ts).
describe('npm run start:scaled on empty engines', () => {
  let nats: EngineProcess;
  let redis: EngineProcess;
  let dataDir: string;
  let script: ChildProcess;
  let output = '';

  beforeAll(async () => {
    [nats, redis] = [await EngineProcess.start('nats'), await EngineProcess.start('redis')];
    dataDir = mkdtempSync(join(tmpdir(), 'cdp-start-scaled-'));
  });
  afterAll(async () => {
    if (script && script.exitCode === null) {
      const exited = new Promise((r) => script.once('exit', r));
      script.kill('SIGTERM');
      await exited;
    }
    await nats?.remove();
    await redis?.remove();
    rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('creates the first account and logs its keys once; the keys work', async () => {
    const port = await freePort();
    script = spawn(process.execPath, [join(ROOT, 'scripts', 'start-scaled.js')], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        NATS_URL: nats.url,
        REDIS_URL: redis.url,
        CDP_DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    script.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    script.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const created = () => output.split('\n').find((l) => l.includes('created the first account'));
    await eventually(
      () => {
        // What the three processes said so far, should they never get there.
        if (!created()) throw new Error(`no account created yet:\n${output.slice(-3000)}`);
        return true;
      },
      45_000,
      100,
    );
    const { publicKey, privateKey } = JSON.parse(created()!) as { publicKey: string; privateKey: string };
    expect(privateKey.startsWith(`${publicKey}.`)).toBe(true);
    let status = 0;
    await eventually(async () => {
      const res = await request(`http://127.0.0.1:${port}`)
        .get('/v3/profiles?email=nobody@x.com')
        .set('x-api-key', privateKey);
      status = res.status;
      return status !== 503;
    });
    // Authenticated (404: no such customer), not 401.
    expect(status).toBe(404);
    expect(output.split('created the first account')).toHaveLength(2);
  }, 60_000);
});
