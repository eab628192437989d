import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { PassThrough, Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type ServerSideEncryption,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Settings } from '@cdp/config';
import type { DriverHealth } from '@cdp/contracts';
import { Buckets, checkKey, type BucketName, type ListedObject, type ObjectStat } from '../buckets.port.js';

/** A stream is uploaded in parts of this size (S3's minimum part is 5 MiB); a smaller object in one PUT. */
const PART_BYTES = 8 * 1024 * 1024;

/**
 * Buckets in an S3-compatible object store (AWS S3, MinIO; path-style addressing for the latter). Every
 * object the platform writes asks for server-side encryption (`AES256` unless configured otherwise, with
 * a KMS key id when given); objects uploaded encrypted are read like any other (the store decrypts).
 * A stream is uploaded in parts, so memory holds one part whatever the object's size; S3 shows an object
 * only once its upload is complete, so readers never see it partly written.
 */
export class S3Buckets extends Buckets {
  private readonly client: S3Client;

  constructor(private readonly settings: S3Settings) {
    super();
    this.client = new S3Client({
      region: settings.region,
      forcePathStyle: settings.forcePathStyle,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      ...(settings.accessKeyId && settings.secretAccessKey
        ? { credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } }
        : {}),
    });
  }

  private bucketOf(bucket: BucketName): string {
    return this.settings.buckets[bucket];
  }

  private encryption(): { ServerSideEncryption?: ServerSideEncryption; SSEKMSKeyId?: string } {
    if (!this.settings.sse) return {};
    return {
      ServerSideEncryption: this.settings.sse,
      ...(this.settings.sse === 'aws:kms' && this.settings.kmsKeyId
        ? { SSEKMSKeyId: this.settings.kmsKeyId }
        : {}),
    };
  }

  async write(bucket: BucketName, key: string, data: Buffer | string | Readable): Promise<void> {
    checkKey(key);
    if (!(data instanceof Readable)) {
      await this.put(bucket, key, Buffer.from(data));
      return;
    }
    let uploadId: string | undefined;
    const parts: { ETag: string; PartNumber: number }[] = [];
    let pending: Buffer[] = [];
    let size = 0;
    const sendPart = async (body: Buffer): Promise<void> => {
      uploadId ??= (
        await this.client.send(
          new CreateMultipartUploadCommand({ Bucket: this.bucketOf(bucket), Key: key, ...this.encryption() }),
        )
      ).UploadId!;
      const PartNumber = parts.length + 1;
      const res = await this.client.send(
        new UploadPartCommand({
          Bucket: this.bucketOf(bucket),
          Key: key,
          UploadId: uploadId,
          PartNumber,
          Body: body,
        }),
      );
      parts.push({ ETag: res.ETag!, PartNumber });
    };
    try {
      for await (const chunk of data) {
        const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
        pending.push(buf);
        size += buf.length;
        if (size >= PART_BYTES) {
          await sendPart(Buffer.concat(pending));
          pending = [];
          size = 0;
        }
      }
      if (uploadId === undefined) {
        await this.put(bucket, key, Buffer.concat(pending));
        return;
      }
      if (size > 0) await sendPart(Buffer.concat(pending));
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucketOf(bucket),
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
    } catch (err) {
      if (uploadId !== undefined) {
        await this.client
          .send(
            new AbortMultipartUploadCommand({ Bucket: this.bucketOf(bucket), Key: key, UploadId: uploadId }),
          )
          .catch(() => undefined);
      }
      throw err;
    }
  }

  private async put(bucket: BucketName, key: string, body: Buffer): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucketOf(bucket), Key: key, Body: body, ...this.encryption() }),
    );
  }

  async moveIn(bucket: BucketName, key: string, file: string): Promise<void> {
    checkKey(key);
    await this.write(bucket, key, createReadStream(file));
    await rm(file, { force: true });
  }

  read(bucket: BucketName, key: string): Readable {
    checkKey(key);
    const out = new PassThrough();
    this.client
      .send(new GetObjectCommand({ Bucket: this.bucketOf(bucket), Key: key }))
      .then((res) => {
        const body = res.Body as Readable;
        body.once('error', (err) => out.destroy(err));
        body.pipe(out);
      })
      .catch((err: unknown) => out.destroy(notFound(err) as Error));
    return out;
  }

  async list(bucket: BucketName, prefix: string): Promise<string[]> {
    return (await this.listObjects(bucket, prefix)).map((o) => o.key);
  }

  async listObjects(bucket: BucketName, prefix: string): Promise<ListedObject[]> {
    const trimmed = prefix.replace(/\/$/, '');
    const Prefix = trimmed ? `${checkKey(trimmed).join('/')}/` : undefined;
    const objects: ListedObject[] = [];
    let ContinuationToken: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucketOf(bucket), Prefix, ContinuationToken }),
      );
      for (const o of page.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue;
        objects.push({ key: o.Key, ...objectStat(o.Size, o.ETag, o.LastModified) });
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
    return objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async remove(bucket: BucketName, key: string): Promise<void> {
    checkKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucketOf(bucket), Key: key }));
  }

  async stat(bucket: BucketName, key: string): Promise<ObjectStat | undefined> {
    checkKey(key);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucketOf(bucket), Key: key }));
      return objectStat(head.ContentLength, head.ETag, head.LastModified);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  presignPut(bucket: BucketName, key: string, expiresSeconds: number): Promise<string | undefined> {
    checkKey(key);
    return getSignedUrl(this.client, new PutObjectCommand({ Bucket: this.bucketOf(bucket), Key: key }), {
      expiresIn: expiresSeconds,
    });
  }

  presignGet(bucket: BucketName, key: string, expiresSeconds: number): Promise<string | undefined> {
    checkKey(key);
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucketOf(bucket), Key: key }), {
      expiresIn: expiresSeconds,
    });
  }

  async health(): Promise<DriverHealth> {
    const looks = await Promise.allSettled(
      (['incoming', 'scratch', 'export'] as const).map((b) =>
        this.client.send(new HeadBucketCommand({ Bucket: this.bucketOf(b) })),
      ),
    );
    const failed = looks.find((l): l is PromiseRejectedResult => l.status === 'rejected');
    if (!failed) return { driver: 's3', ready: true };
    const err = failed.reason as Error;
    return { driver: 's3', ready: false, detail: err?.message || err?.name || String(err) };
  }

  close(): void {
    this.client.destroy();
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}

/** A missing object fails as a missing file does (`ENOENT`), whatever the driver. */
function notFound(err: unknown): unknown {
  if (!isNotFound(err)) return err;
  return Object.assign(new Error(`no such object: ${(err as Error).message}`), { code: 'ENOENT' });
}

/** Size, version and digest of an object from a HEAD or a listing (both give size, ETag and date). */
function objectStat(
  size: number | undefined,
  quotedEtag: string | undefined,
  modified: Date | undefined,
): ObjectStat {
  const etag = (quotedEtag ?? '').replaceAll('"', '');
  return { size: size ?? 0, version: `${etag}:${modified?.getTime() ?? 0}`, ...(etag ? { etag } : {}) };
}
