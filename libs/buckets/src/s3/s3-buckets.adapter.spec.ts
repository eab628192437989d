import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import type { S3Settings } from '@cdp/config';
import { bucketsContract } from '../buckets.contract.js';
import { S3Buckets } from './s3-buckets.adapter.js';

/** An S3-protocol server of the test's own, on 127.0.0.1 (s3rver), with fresh buckets for each test. */
let server: S3rver;
let endpoint: string;
let dir: string;
let round = 0;
const opened: S3Buckets[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cdp-s3rver-'));
  server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [] });
  const { port } = (await server.run()) as { port: number };
  endpoint = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  for (const b of opened) b.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function settings(names: S3Settings['buckets']): S3Settings {
  return {
    endpoint,
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    forcePathStyle: true,
    buckets: names,
    sse: 'AES256',
    kmsKeyId: undefined,
  };
}

async function freshBuckets(): Promise<S3Buckets> {
  round++;
  const names = { incoming: `in-${round}`, scratch: `scratch-${round}`, export: `out-${round}` };
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  const { CreateBucketCommand } = await import('@aws-sdk/client-s3');
  for (const name of Object.values(names)) await client.send(new CreateBucketCommand({ Bucket: name }));
  client.destroy();
  const buckets = new S3Buckets(settings(names));
  opened.push(buckets);
  return buckets;
}

bucketsContract('S3 (s3rver)', freshBuckets);

describe('S3Buckets', () => {
  it('asks for server-side encryption on every object it writes, whole or in parts', async () => {
    // s3rver keeps no encryption setting: a proxy in front of it records what the driver asks for.
    const asked: { method: string; url: string; sse?: string; kms?: string }[] = [];
    const upstreamPort = Number(new URL(endpoint).port);
    const proxy = createServer((req, res) => {
      asked.push({
        method: req.method!,
        url: req.url!,
        sse: req.headers['x-amz-server-side-encryption'] as string | undefined,
        kms: req.headers['x-amz-server-side-encryption-aws-kms-key-id'] as string | undefined,
      });
      const upstream = request(
        { host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers: req.headers },
        (r) => {
          res.writeHead(r.statusCode!, r.headers);
          r.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const { port } = proxy.address() as AddressInfo;
    await freshBuckets();
    const names = { incoming: `in-${round}`, scratch: `scratch-${round}`, export: `out-${round}` };
    for (const sse of [
      { sse: 'AES256' as const, kmsKeyId: undefined },
      { sse: 'aws:kms' as const, kmsKeyId: 'key-1' },
    ]) {
      const buckets = new S3Buckets({ ...settings(names), endpoint: `http://127.0.0.1:${port}`, ...sse });
      asked.length = 0;
      await buckets.write('export', 'e.csv', 'x');
      await buckets.write('export', 'big.csv', Readable.from([Buffer.alloc(9 * 1024 * 1024, 'y')]));
      buckets.close();
      const puts = asked.filter((a) => a.method === 'PUT' && !a.url.includes('partNumber'));
      const starts = asked.filter((a) => a.method === 'POST' && a.url.includes('uploads'));
      expect([puts.length, starts.length]).toEqual([1, 1]);
      for (const a of [...puts, ...starts]) expect(a).toMatchObject({ sse: sse.sse, kms: sse.kmsKeyId });
    }
    proxy.close();
    const client = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    const got = await client.send(new GetObjectCommand({ Bucket: names.export, Key: 'big.csv' }));
    expect((await got.Body!.transformToByteArray()).length).toBe(9 * 1024 * 1024);
    client.destroy();
  });

  it('reads an upload the client encrypted (SSE) like any other', async () => {
    const buckets = await freshBuckets();
    const client = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    await client.send(
      new PutObjectCommand({
        Bucket: `in-${round}`,
        Key: 'trk/svc_events_sse.csv',
        Body: 'type,email\npageview,a@x.com\n',
        ServerSideEncryption: 'AES256',
      }),
    );
    client.destroy();
    expect((await buckets.listObjects('incoming', '')).map((o) => o.key)).toEqual(['trk/svc_events_sse.csv']);
    let text = '';
    for await (const chunk of buckets.read('incoming', 'trk/svc_events_sse.csv')) text += String(chunk);
    expect(text).toBe('type,email\npageview,a@x.com\n');
    buckets.close();
  });

  it('gives a presigned URL a client can GET a finished export from', async () => {
    const buckets = await freshBuckets();
    await buckets.write('export', 'trk/data-exports/x/events_00000.csv', 'event_id\ne1\n');
    const url = (await buckets.presignGet('export', 'trk/data-exports/x/events_00000.csv', 60))!;
    expect(url).toContain('X-Amz-Signature=');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('event_id\ne1\n');
  });

  it('gives a presigned URL a client can PUT an upload to, until it expires', async () => {
    const buckets = await freshBuckets();
    const url = (await buckets.presignPut('incoming', 'trk/svc_events_1.csv', 60))!;
    expect(url).toContain('X-Amz-Signature=');
    const res = await fetch(url, { method: 'PUT', body: 'type,email\n' });
    expect(res.status).toBe(200);
    expect(await buckets.list('incoming', 'trk')).toEqual(['trk/svc_events_1.csv']);
  });

  it('is not ready when a bucket is missing', async () => {
    const buckets = new S3Buckets(settings({ incoming: 'nope-a', scratch: 'nope-b', export: 'nope-c' }));
    opened.push(buckets);
    expect(await buckets.health()).toMatchObject({ driver: 's3', ready: false });
  });
});
