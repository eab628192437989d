import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';

export const IDEMPOTENCY_HEADER = 'idempotency-key';

const digests = new WeakMap<FastifyRequest['raw'], string>();
const EMPTY = createHash('sha256').digest('hex');

/**
 * Hashes the body of every request that carries an `Idempotency-Key`, as bytes after gzip decoding:
 * the same JSON sent plain or gzip-encoded is the same body; a body that differs in any byte
 * (whitespace, key order) is another. Install after the hook that decodes gzip.
 */
export function installRequestHashing(fastify: FastifyInstance): void {
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    if (request.headers[IDEMPOTENCY_HEADER] === undefined) return done(null, payload);
    const hashing = new HashingStream(createHash('sha256'), (hex) => digests.set(request.raw, hex));
    payload.on('error', (err) => hashing.destroy(err));
    const out = payload.pipe(hashing);
    // Fastify compares Content-Length with the encoded bytes the gzip hook counted, when there are any.
    const encoded = payload as typeof payload & { receivedEncodedLength?: number };
    if ('receivedEncodedLength' in encoded)
      Object.defineProperty(out, 'receivedEncodedLength', {
        get: () => encoded.receivedEncodedLength,
        configurable: true,
      });
    done(null, out);
  });
}

/**
 * The canonical request an `Idempotency-Key` is bound to: method, path (without the query string) and
 * the hash of the body bytes (a request without a body hashes as an empty body).
 */
export function requestHash(request: FastifyRequest): string {
  const path = request.url.split('?', 1)[0] ?? '';
  return createHash('sha256')
    .update(`${request.method}\n${path}\n${digests.get(request.raw) ?? EMPTY}`)
    .digest('hex');
}

class HashingStream extends Transform {
  constructor(
    private readonly hash: Hash,
    private readonly onDigest: (hex: string) => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.onDigest(this.hash.digest('hex'));
    callback();
  }
}
