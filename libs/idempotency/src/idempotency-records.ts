import { createHash } from 'node:crypto';
import { IdempotencyStore } from './idempotency-store.port.js';

/** The answer a request with a key got, given again to every resend of it. */
export interface StoredAnswer {
  status: number;
  body: unknown;
  /** The `z-request-id` of the first answer. */
  requestId: string;
}

/**
 * A record: `pending` while a request holds the key (until `lease`, ms since the epoch), `done` once its
 * answer is known. `hash` is the canonical request's (method, path, body) of the request that holds it.
 */
type IdempotencyRecord =
  | { state: 'pending'; hash: string; owner: string; lease: number }
  | { state: 'done'; hash: string; answer: StoredAnswer };

/** What a request with a key does. */
export type Begin =
  /** Run the request. `resend`: an earlier attempt with the same body may have published it already. */
  | { kind: 'proceed'; claim: Claim; resend: boolean }
  /** The same request was answered already: give its answer again. */
  | { kind: 'replay'; answer: StoredAnswer }
  /** The key was used with another request. */
  | { kind: 'mismatch' }
  /** A request with the key is running now. */
  | { kind: 'in-flight'; retryAfterSeconds: number };

/** A held key: only its holder can record the answer or let it go. */
export interface Claim {
  readonly account: string;
  readonly key: string;
  readonly hash: string;
  /** The record as this holder wrote it. */
  readonly held: string;
}

export interface IdempotencyTimes {
  /** How long an answer is remembered (the client's window to resend). */
  ttlMs: number;
  /** How long a request holds its key before another attempt may take it over (its holder died). */
  leaseMs: number;
}

/**
 * The rules of the `Idempotency-Key` header over an IdempotencyStore, the same for every driver: a key
 * is per account; the first request with it holds it while it runs; a durable answer (2xx) is kept for
 * `ttlMs` and given to every resend of the same request; another request with the key is a mismatch;
 * an answer that stored nothing lets the key go.
 */
export class IdempotencyRecords {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly times: IdempotencyTimes,
    private readonly clock: () => number = Date.now,
  ) {}

  async begin(account: string, key: string, hash: string, owner: string): Promise<Begin> {
    // Compare-and-set loses only to another request changing the record meanwhile: look again.
    for (;;) {
      const raw = await this.store.get(account, key);
      const current = raw === undefined ? undefined : (JSON.parse(raw) as IdempotencyRecord);
      const now = this.clock();
      if (current?.state === 'done') {
        return current.hash === hash ? { kind: 'replay', answer: current.answer } : { kind: 'mismatch' };
      }
      if (current?.state === 'pending' && current.lease > now) {
        return { kind: 'in-flight', retryAfterSeconds: Math.max(1, Math.ceil((current.lease - now) / 1000)) };
      }
      // No record, or one whose holder died or failed without a durable answer: take the key.
      const record: IdempotencyRecord = { state: 'pending', hash, owner, lease: now + this.times.leaseMs };
      const held = JSON.stringify(record);
      if (await this.store.compareAndSet(account, key, raw, held, now + this.times.ttlMs)) {
        return { kind: 'proceed', claim: { account, key, hash, held }, resend: current?.hash === hash };
      }
    }
  }

  /**
   * Keeps the durable answer for the window. False when the claim was taken over meanwhile (this
   * holder outlived its lease): the request under the same message id is then the other's to answer.
   */
  async finish(claim: Claim, answer: StoredAnswer): Promise<boolean> {
    const record: IdempotencyRecord = { state: 'done', hash: claim.hash, answer };
    return this.store.compareAndSet(
      claim.account,
      claim.key,
      claim.held,
      JSON.stringify(record),
      this.clock() + this.times.ttlMs,
    );
  }

  /**
   * Lets the key go after an answer that is not durable. `maybePublished`: the request may have reached
   * the bus (a failed or unconfirmed publish), so the record stays, its lease ended, and the next attempt
   * with the same body is marked a resend; otherwise (a 4xx: nothing published) the record is deleted.
   */
  async abandon(claim: Claim, maybePublished: boolean): Promise<void> {
    const now = this.clock();
    const next: IdempotencyRecord | undefined = maybePublished
      ? { ...(JSON.parse(claim.held) as IdempotencyRecord & { state: 'pending' }), lease: now }
      : undefined;
    await this.store.compareAndSet(
      claim.account,
      claim.key,
      claim.held,
      next && JSON.stringify(next),
      now + this.times.ttlMs,
    );
  }
}

/**
 * The bus message id of a request with a key: the same for every attempt of the same request of the
 * same account, so a publish repeated after a crash or a lost acknowledgement is dropped by the bus as a
 * duplicate (and by the store per message id). UUID-shaped (version 8, RFC 9562) like every request id.
 */
export function derivedRequestId(account: string, key: string, hash: string): string {
  const bytes = createHash('sha256')
    .update(account)
    .update('\u0000')
    .update(key)
    .update('\u0000')
    .update(hash)
    .digest();
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** An `Idempotency-Key` is 1–255 printable ASCII characters (space to tilde). */
export function idempotencyKeyProblem(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return 'must be sent once';
  if (!/^[\x20-\x7e]{1,255}$/.test(value)) return 'must be 1 to 255 printable ASCII characters';
  return undefined;
}
