import { ApiError } from '@cdp/contracts';
import {
  consentValidator,
  metadataValidator,
  reachabilityValidator,
} from './identifier-updates.validator.js';

const context = {
  nowMs: 1_700_000_000_000,
  eventFields: { campaign: 'string' as const },
  customerFields: { tier: 'string' as const, score: 'number' as const, vip: 'boolean' as const },
  identifiers: new Set<string>(),
  messagingIdentifiers: new Set<string>(),
};

function invalidsOf(run: () => unknown) {
  try {
    run();
  } catch (err) {
    if (err instanceof ApiError && 'invalids' in err.detail) return err.detail.invalids;
    throw err;
  }
  throw new Error('no invalids');
}

describe('identifier update validators', () => {
  it('read consent: the value normalized as resolution keys it (a phone as sent), ts in seconds or ISO 8601', () => {
    const [email, phone, token] = consentValidator.parse(
      [
        {
          identifier_field_name: 'email',
          identifier_value: 'Ann@X.com',
          consent: true,
          consent_update_ts: 1_600_000_000,
        },
        {
          identifier_field_name: 'phone',
          identifier_value: ' +47 555 ',
          consent: false,
          consent_update_ts: '2024-05-01',
        },
        {
          identifier_field_name: 'ios_push_tokens',
          identifier_value: 't1',
          consent: true,
          event_data: { campaign: 'x' },
        },
      ],
      context,
    );
    expect(email).toMatchObject({
      type: 'consent',
      field: 'email',
      value: 'ann@x.com',
      ts: 1_600_000_000_000,
      reason: null,
    });
    expect(email!.type === 'consent' && email!.event).toMatchObject({ type: 'consent', action: 'opt-in' });
    expect(phone).toMatchObject({
      field: 'phone',
      value: ' +47 555 ',
      ts: Date.UTC(2024, 4, 1),
      consent: false,
    });
    expect(phone!.type === 'consent' && phone!.event.identifiers).toEqual({ phone: ' +47 555 ' });
    expect(token!.type === 'consent' && token!.event).toMatchObject({
      action: 'opt-in',
      ts: context.nowMs,
      data: { campaign: 'x' },
    });
  });

  it('refuse consent of identifiers nobody messages, and junk values', () => {
    expect(
      invalidsOf(() =>
        consentValidator.parse(
          [
            { identifier_field_name: 'vuid', identifier_value: 'v', consent: true },
            { identifier_field_name: 'email', identifier_value: 'unknown', consent: true },
          ],
          context,
        ),
      ).map((i) => [i.event, i.field]),
    ).toEqual([
      [0, 'identifier_field_name'],
      [1, 'identifier_value'],
    ]);
  });

  it('read reachability: an update type exactly when unreachable', () => {
    const [down] = reachabilityValidator.parse(
      {
        identifier_field_name: 'email',
        identifier_value: 'a@x.com',
        reachable: false,
        reachable_update_type: 'expired',
      },
      context,
    );
    expect(down).toMatchObject({
      type: 'reachability',
      reachable: false,
      update_type: 'expired',
      reason: null,
    });
    const [up] = reachabilityValidator.parse(
      {
        identifier_field_name: 'email',
        identifier_value: 'a@x.com',
        reachable: true,
        reachable_update_type: null,
      },
      context,
    );
    expect(up).toMatchObject({ reachable: true, update_type: null });
  });

  it('read metadata by the customers fields’ types; null clears', () => {
    const [m] = metadataValidator.parse(
      {
        identifier_field_name: 'customer_id',
        identifier_value: 'c1',
        metadata: { tier: null, score: '1.5', vip: 1 },
      },
      context,
    );
    expect(m).toMatchObject({
      type: 'metadata',
      ts: context.nowMs,
      metadata: { tier: null, score: 1.5, vip: true },
    });
    expect(
      invalidsOf(() =>
        metadataValidator.parse(
          {
            identifier_field_name: 'customer_id',
            identifier_value: 'c1',
            metadata: { vip: 'maybe', other: 1 },
          },
          context,
        ),
      ).map((i) => i.field),
    ).toEqual(['metadata.vip', 'metadata.other']);
  });
});
