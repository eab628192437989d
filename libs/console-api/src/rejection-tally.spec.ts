import type { FastifyRequest } from 'fastify';
import {
  MAX_KEYS_PER_MINUTE,
  OTHER_REASONS,
  OTHER_TYPES,
  RejectionOutbox,
  RejectionTally,
} from './rejection-tally.js';
import { refusalsOf } from './rejection-tap.js';

const MINUTE = Date.UTC(2026, 10, 26, 9, 30);
const answer = (detail: unknown) =>
  JSON.stringify({ title: 'Bad Request', status: 400, timestamp: 'now', detail });
const request = (body: unknown) => ({ body }) as FastifyRequest;

describe('rejection counts', () => {
  it('sum per account, minute, outcome, type and reason, and are forgotten once drained', () => {
    const tally = new RejectionTally();
    const r = { outcome: 'rejected', type: 'product', reason: 'type: required' } as const;
    tally.add('a', MINUTE + 1_000, [r, r]);
    tally.add('a', MINUTE + 59_000, [r]);
    tally.add('a', MINUTE + 60_000, [r]);
    tally.add('b', MINUTE, [{ ...r, outcome: 'dropped' }]);
    const drained = tally.drain();
    expect(drained.get('a')).toEqual([
      { minute: MINUTE, outcome: 'rejected', type: 'product', reason: 'type: required', records: 3 },
      { minute: MINUTE + 60_000, outcome: 'rejected', type: 'product', reason: 'type: required', records: 1 },
    ]);
    expect(drained.get('b')).toHaveLength(1);
    expect(tally.empty).toBe(true);
  });

  it('keep a bounded number of reasons per minute: the rest add up as other reasons', () => {
    const tally = new RejectionTally();
    const many = Array.from({ length: 500 }, (_, i) => ({
      outcome: 'rejected' as const,
      type: 'x',
      reason: `reason ${i}`,
    }));
    tally.add('a', MINUTE, many);
    const rows = tally.drain().get('a')!;
    expect(rows).toHaveLength(MAX_KEYS_PER_MINUTE);
    expect(rows.reduce((n, r) => n + r.records, 0)).toBe(500);
    expect(rows.find((r) => r.reason === OTHER_REASONS)!.records).toBe(500 - (MAX_KEYS_PER_MINUTE - 1));
  });

  it('keep it bounded when the sender invents a new type per record', () => {
    const tally = new RejectionTally();
    const many = Array.from({ length: 500 }, (_, i) => ({
      outcome: 'rejected' as const,
      type: `type ${i}`,
      reason: 'r',
    }));
    tally.add('a', MINUTE, many);
    const rows = tally.drain().get('a')!;
    expect(rows).toHaveLength(MAX_KEYS_PER_MINUTE);
    expect(rows.find((r) => r.type === OTHER_TYPES)!.records).toBe(500 - (MAX_KEYS_PER_MINUTE - 1));
  });

  it('send a failed flush again under its own id, until it is a day old', () => {
    const tally = new RejectionTally();
    const outbox = new RejectionOutbox(tally);
    tally.add('a', MINUTE, [{ outcome: 'rejected', type: 't', reason: 'r' }]);
    const [first] = outbox.take(MINUTE);
    outbox.failed(first!);
    tally.add('a', MINUTE, [{ outcome: 'rejected', type: 't', reason: 'r' }]);
    const again = outbox.take(MINUTE + 5_000);
    // The failed batch unchanged (its id: the store keeps it once if it had been stored), then the new one.
    expect(again[0]).toEqual(first);
    expect(again).toHaveLength(2);
    expect(again[1]!.id).not.toBe(first!.id);
    outbox.failed(again[0]!);
    expect(outbox.take(MINUTE + 86_400_000 + 60_000)).toEqual([]);
    expect(outbox.empty).toBe(true);
  });
});

describe('what an answer refused', () => {
  it('counts every record of a refused batch: the invalid ones by their reason, the rest as refused with it', () => {
    const body = [{ type: 'product' }, { type: 'order' }, { type: '' }];
    const refusals = refusalsOf(
      400,
      answer({ invalids: [{ event: 0, field: 'identifiers', reason: 'required' }] }),
      request(body),
      'events',
    );
    expect(refusals).toEqual([
      { outcome: 'rejected', type: 'product', reason: 'identifiers: required' },
      { outcome: 'rejected', type: 'order', reason: 'refused with its batch: another record was invalid' },
      { outcome: 'rejected', type: 'events', reason: 'refused with its batch: another record was invalid' },
    ]);
  });

  it('names one record by its route, and a refusal without invalids by its message', () => {
    expect(
      refusalsOf(
        400,
        answer({ invalids: [{ field: ['email', 'customer_id'], reason: 'one is required' }] }),
        request({ attributes: {} }),
        'profiles',
      ),
    ).toEqual([{ outcome: 'rejected', type: 'profiles', reason: 'email or customer_id: one is required' }]);
    expect(refusalsOf(429, answer({ message: 'rate limit exceeded' }), request(undefined), 'events')).toEqual(
      [{ outcome: 'rejected', type: 'events', reason: 'rate limit exceeded' }],
    );
  });

  it('counts the fields a 202 lists as dropped', () => {
    const accepted = JSON.stringify({ status: 202, dropped: [{ event: 1, fields: ['colour', 'size'] }] });
    expect(refusalsOf(202, accepted, request([]), 'events')).toEqual([
      { outcome: 'dropped', type: 'events', reason: 'dropped field colour' },
      { outcome: 'dropped', type: 'events', reason: 'dropped field size' },
    ]);
  });
});
