import { loadConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { encodeEventsBody, type EncodedEvents, type EventsEncodeContext } from '../events/events-codec.js';
import { eventsValidator } from '@cdp/records';
import { IngestCodec } from './ingest-codec.js';

const context: EventsEncodeContext = {
  nowMs: Date.UTC(2026, 0, 2),
  custom: { tier: 'number' },
  customIds: new Set(['loyalty_id']),
  clientIp: '203.0.113.7',
};
const bodies = {
  valid: [
    {
      type: 'pageview',
      identifiers: { email: 'Ann@Example.com' },
      data: { page: '/', tier: 3, colour: 'red' },
    },
    {
      type: 'order',
      action: 'purchase',
      identifiers: { loyalty_id: 'L-1' },
      data: { order: { order_id: 'o1', total: 5 } },
    },
  ],
  invalid: [{ type: 'pageview', identifiers: { email: 'not an email' } }],
};
const bytes = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

function codec(workers: number): IngestCodec {
  return new IngestCodec(loadConfig({ CDP_INGEST_WORKERS: String(workers) }), createLogger('silent'));
}

describe('IngestCodec: POST /v3/events bodies read off the main thread', () => {
  const codecs = [codec(0), codec(2)];
  afterAll(async () => {
    for (const c of codecs) await c.onModuleDestroy();
  });

  it('runs its worker threads when asked for them (the build is there), from the first body on', async () => {
    expect(codecs.map((c) => c.runningThreads())).toEqual([0, 0]);
    await Promise.all(codecs.map((c) => c.start()));
    expect(codecs.map((c) => c.runningThreads())).toEqual([0, 2]);
  });

  it('gives the records the main thread would have read, as JSON, with what the 202 lists as dropped', async () => {
    const here = eventsValidator.parse(bodies.valid, context);
    for (const record of here) record.data.ip = '203.0.113.7';
    for (const c of codecs) {
      const result = (await c.encodeEvents(bytes(bodies.valid), context)) as Extract<
        EncodedEvents,
        { ok: true }
      >;
      expect(result.ok).toBe(true);
      expect(result.count).toBe(2);
      expect(JSON.parse(result.recordsJson)).toEqual(JSON.parse(JSON.stringify(here)));
      expect(result.dropped).toEqual([{ event: 0, fields: ['colour'] }]);
    }
  });

  it('answers every invalid record, and a body that is not JSON, as the main thread does', async () => {
    for (const body of [bodies.invalid, '{"type": ', '\u0000', '[{"__proto__": {}}]']) {
      const expected = encodeEventsBody(bytes(body), context);
      expect(expected.ok).toBe(false);
      for (const c of codecs) expect(await c.encodeEvents(bytes(body), context)).toEqual(expected);
    }
  });

  it('keeps a private key’s ip as sent (no clientIp given)', async () => {
    const privateKey: EventsEncodeContext = { ...context };
    delete privateKey.clientIp;
    const body = [{ type: 'pageview', identifiers: { vuid: 'v1' }, data: { ip: '198.51.100.1' } }];
    for (const c of codecs) {
      const result = (await c.encodeEvents(bytes(body), privateKey)) as Extract<EncodedEvents, { ok: true }>;
      expect(JSON.parse(result.recordsJson)[0].data.ip).toBe('198.51.100.1');
    }
  });
});
