import type { FastifyRequest } from 'fastify';
import { MAX_KEYS_PER_MINUTE, OTHER_REASONS, RejectionTally } from './rejection-tally.js';
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

  it('take back a failed flush, except what is older than a day', () => {
    const tally = new RejectionTally();
    const row = { minute: MINUTE, outcome: 'rejected' as const, type: 't', reason: 'r', records: 4 };
    tally.restore('a', [row, { ...row, minute: MINUTE - 2 * 86_400_000 }], MINUTE);
    tally.add('a', MINUTE, [{ outcome: 'rejected', type: 't', reason: 'r' }]);
    expect(tally.drain().get('a')).toEqual([{ ...row, records: 5 }]);
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
