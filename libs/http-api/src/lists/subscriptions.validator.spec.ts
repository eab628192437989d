import { ApiError } from '@cdp/contracts';
import { parseSubscriptions } from './subscriptions.validator.js';

function invalids(body: unknown): unknown {
  try {
    parseSubscriptions(body);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError).detail;
  }
  throw new Error('accepted');
}

describe('parseSubscriptions', () => {
  it('reads a subscription update, keeping the email as sent in the echo', () => {
    expect(
      parseSubscriptions({ list_id: 'news', email: ' Ann@X.com ', subscribed: false, extra: 1 }),
    ).toEqual({
      records: [
        { identifiers: { email: 'ann@x.com' }, list_id: 'news', subscribed: false, channel_opt_in: false },
      ],
      echo: [{ list_id: 'news', email: ' Ann@X.com ', subscribed: false }],
    });
  });

  it('reads a channel opt-in as a change of svc_all', () => {
    expect(parseSubscriptions([{ opted_in: false, email: 'a@x.com' }])).toEqual({
      records: [
        { identifiers: { email: 'a@x.com' }, list_id: 'svc_all', subscribed: false, channel_opt_in: true },
      ],
      echo: [{ email: 'a@x.com', opted_in: false }],
    });
  });

  it('names every missing or wrong field; in an array with its index', () => {
    expect(invalids({})).toEqual({
      invalids: [
        { field: 'email', reason: 'is required' },
        { field: 'list_id', reason: 'is required' },
        { field: 'subscribed', reason: 'is required' },
      ],
    });
    expect(invalids([{ list_id: '', email: 'null', subscribed: 'true' }, 'text'])).toEqual({
      invalids: [
        { event: 0, field: 'email', reason: 'must be an email address', message: expect.any(String) },
        {
          event: 0,
          field: 'list_id',
          reason: expect.stringContaining('list id'),
          message: expect.any(String),
        },
        { event: 0, field: 'subscribed', reason: 'must be true or false', message: expect.any(String) },
        { event: 1, field: 'body', reason: 'an update must be an object', message: expect.any(String) },
      ],
    });
    expect(invalids(null)).toEqual({ invalids: [{ field: 'body', reason: 'an update must be an object' }] });
  });

  it('keeps further fields that are event fields for the list/subscribe event, typed; ignores the others', () => {
    const { records, echo } = parseSubscriptions({
      list_id: 'news',
      email: 'ann@example.com',
      subscribed: true,
      channel: 'web',
      page: '/lamps',
      landing: false,
      days_since_last_visit: 3,
      first_name: 'Ann',
      ts: 5,
    });
    expect(records[0]!.event_data).toEqual({
      channel: 'web',
      page: '/lamps',
      landing: false,
      days_since_last_visit: 3,
    });
    expect(echo).toEqual([{ list_id: 'news', email: 'ann@example.com', subscribed: true }]);
    expect(parseSubscriptions({ opted_in: true, email: 'a@b.co' }).records[0]!.event_data).toBeUndefined();
    expect(invalids({ list_id: 'news', email: 'a@b.co', subscribed: true, page: 7, landing: 'yes' })).toEqual(
      {
        invalids: [
          { field: 'page', reason: 'must be a string of at most 1024 characters' },
          { field: 'landing', reason: 'must be true or false' },
        ],
      },
    );
  });

  it('takes 1 to 1000 updates', () => {
    const one = { list_id: 'news', email: 'a@x.com', subscribed: true };
    expect(invalids([])).toEqual({ invalids: [{ field: 'body', reason: 'must hold at least one update' }] });
    expect(parseSubscriptions(Array<object>(1000).fill(one)).records).toHaveLength(1000);
    expect(invalids(Array<object>(1001).fill(one))).toEqual({
      invalids: [{ field: 'body', reason: 'at most 1000 updates per request' }],
    });
  });

  it('refuses strings longer than 1024 characters', () => {
    const long = 'x'.repeat(1025);
    expect(invalids({ list_id: long, email: `${'a'.repeat(1020)}@x.com`, subscribed: true })).toEqual({
      invalids: [
        { field: 'email', reason: 'must be at most 1024 characters' },
        { field: 'list_id', reason: expect.stringContaining('1024') },
      ],
    });
  });
});
