import 'reflect-metadata';
import { ApiError } from '@cdp/contracts';
import { EVENT_DATA_FIELDS } from '@cdp/domain';
import { FURTHER_FIELDS } from './subscription-update.dto.js';
import { SubscriptionsValidation } from './subscriptions.pipe.js';

/** The body as the route reads it: checked by the DTO of each update's kind, then records and echo. */
const parseSubscriptions = (body: unknown) => SubscriptionsValidation.transform(body);

async function invalids(body: unknown): Promise<unknown> {
  try {
    await parseSubscriptions(body);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError).detail;
  }
  throw new Error('accepted');
}

describe('SubscriptionsPipe', () => {
  it('reads a subscription update, keeping the email as sent in the echo', async () => {
    expect(
      await parseSubscriptions({ list_id: 'news', email: ' Ann@X.com ', subscribed: false, extra: 1 }),
    ).toEqual({
      records: [
        { identifiers: { email: 'ann@x.com' }, list_id: 'news', subscribed: false, channel_opt_in: false },
      ],
      echo: [{ list_id: 'news', email: ' Ann@X.com ', subscribed: false }],
    });
  });

  it('reads a channel opt-in as a change of svc_all', async () => {
    expect(await parseSubscriptions([{ opted_in: false, email: 'a@x.com' }])).toEqual({
      records: [
        { identifiers: { email: 'a@x.com' }, list_id: 'svc_all', subscribed: false, channel_opt_in: true },
      ],
      echo: [{ email: 'a@x.com', opted_in: false }],
    });
  });

  it('names every missing or wrong field; in an array with its index', async () => {
    expect(await invalids({})).toEqual({
      invalids: [
        { field: 'email', reason: 'is required' },
        { field: 'list_id', reason: 'is required' },
        { field: 'subscribed', reason: 'is required' },
      ],
    });
    expect(await invalids([{ list_id: '', email: 'null', subscribed: 'true' }, 'text'])).toEqual({
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
    expect(await invalids(null)).toEqual({
      invalids: [{ field: 'body', reason: 'an update must be an object' }],
    });
  });

  it('keeps further fields that are event fields for the list/subscribe event, typed; ignores the others', async () => {
    const { records, echo } = await parseSubscriptions({
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
    expect(
      (await parseSubscriptions({ opted_in: true, email: 'a@b.co' })).records[0]!.event_data,
    ).toBeUndefined();
    expect(
      await invalids({ list_id: 'news', email: 'a@b.co', subscribed: true, page: 7, landing: 'yes' }),
    ).toEqual({
      invalids: [
        { field: 'page', reason: 'must be a string of at most 1024 characters' },
        { field: 'landing', reason: 'must be true or false' },
      ],
    });
  });

  it('takes 1 to 1000 updates', async () => {
    const one = { list_id: 'news', email: 'a@x.com', subscribed: true };
    expect(await invalids([])).toEqual({
      invalids: [{ field: 'body', reason: 'must hold at least one update' }],
    });
    expect((await parseSubscriptions(Array<object>(1000).fill(one))).records).toHaveLength(1000);
    expect(await invalids(Array<object>(1001).fill(one))).toEqual({
      invalids: [{ field: 'body', reason: 'at most 1000 updates per request' }],
    });
  });

  it('refuses strings longer than 1024 characters', async () => {
    const long = 'x'.repeat(1025);
    expect(await invalids({ list_id: long, email: `${'a'.repeat(1020)}@x.com`, subscribed: true })).toEqual({
      invalids: [
        { field: 'email', reason: 'must be at most 1024 characters' },
        { field: 'list_id', reason: expect.stringContaining('1024') },
      ],
    });
  });

  it('checks every event field an update may carry by its type, answering in the order they were written', async () => {
    const further = Object.keys(EVENT_DATA_FIELDS).filter(
      (f) => !['ts', 'order', 'list_id', 'subscribed'].includes(f),
    );
    expect(FURTHER_FIELDS.map((f) => f.name)).toEqual(further);
    const update = { opted_in: true, email: 'a@b.co', days_since_last_visit: 1.5, channel: ['web'] };
    expect(await invalids(update)).toEqual({
      invalids: [
        { field: 'days_since_last_visit', reason: 'must be an integer' },
        { field: 'channel', reason: 'must be a string of at most 1024 characters' },
      ],
    });
  });

  it('answers a member named __proto__ as a member, not a prototype', async () => {
    const body = JSON.parse(
      '{"list_id": "news", "email": "a@b.co", "subscribed": true, "__proto__": {"x": 1}}',
    );
    expect((await parseSubscriptions(body)).echo).toEqual([
      { list_id: 'news', email: 'a@b.co', subscribed: true },
    ]);
  });

  it('answers members named like the prototype chain as the further members they are (ignored)', async () => {
    const update = { opted_in: true, email: 'a@b.co' };
    const expected = await parseSubscriptions([update]);
    for (const key of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString']) {
      for (const value of ['{"polluted":1}', '{"prototype":{"polluted":1}}', 'null', '1', '"x"']) {
        const body: unknown = JSON.parse(`[{"opted_in":true,"email":"a@b.co","${key}":${value}}]`);
        expect(await parseSubscriptions(body)).toEqual(expected);
      }
    }
  });
});
