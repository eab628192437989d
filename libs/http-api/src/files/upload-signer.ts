import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signs the upload URLs the API serves itself where the buckets are local directories (S3 presigns its
 * own): HMAC-SHA256 over the object's key and the expiry. The key comes from `CDP_UPLOAD_SIGNING_KEY`,
 * or is drawn at start (then a URL works only on the replica that issued it, which is the one process
 * of the embedded wiring).
 */
export class UploadSigner {
  private readonly key: Buffer;

  constructor(key: string) {
    this.key = key ? Buffer.from(key) : randomBytes(32);
  }

  sign(objectKey: string, expiresAt: number): string {
    return createHmac('sha256', this.key).update(`${objectKey}\n${expiresAt}`).digest('hex');
  }

  verify(objectKey: string, expiresAt: number, signature: string, now = Date.now()): boolean {
    if (!Number.isSafeInteger(expiresAt) || expiresAt * 1000 < now) return false;
    const expected = Buffer.from(this.sign(objectKey, expiresAt), 'hex');
    const given = Buffer.from(/^[0-9a-f]{64}$/.test(signature) ? signature : '', 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
