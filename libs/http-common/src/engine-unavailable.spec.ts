import { ClosedConnectionError, NoRespondersError, TimeoutError } from '@nats-io/transport-node';
import { ClientClosedError, ClientOfflineError, TimeoutError as RedisTimeoutError } from 'redis';
import { ApiError, EngineUnavailableError } from '@cdp/contracts';
import { toEnvelope } from './error-envelope.filter.js';

/** What a client gets when an engine is away: a 503 it can come back from, never a 500. */
describe('errors of an engine that is away', () => {
  it.each([
    ['NATS request timed out', new TimeoutError()],
    ['NATS connection closed', new ClosedConnectionError()],
    ['JetStream not answering', new NoRespondersError('$JS.API.STREAM.INFO.X')],
    ['Redis offline (reconnecting)', new ClientOfflineError()],
    ['Redis client closed', new ClientClosedError()],
    ['Redis command timed out', new RedisTimeoutError()],
    [
      'a connection refused',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }),
    ],
    ['a driver saying so', new EngineUnavailableError('NATS', 'the connection is down', 2)],
  ])('%s: 503 with Retry-After in the envelope', (_, error) => {
    const { body, headers } = toEnvelope(error);
    expect(body).toEqual({
      title: 'Service Unavailable',
      status: 503,
      timestamp: expect.any(String),
      detail: { message: expect.any(String) },
    });
    expect(headers['retry-after']).toMatch(/^[1-9]\d*$/);
  });

  it('anything else stays an internal error, and an ApiError stays what it says', () => {
    expect(toEnvelope(new Error('boom')).body.status).toBe(500);
    expect(toEnvelope(new TypeError('x is undefined')).body.status).toBe(500);
    expect(toEnvelope(ApiError.notFound('nobody')).body.status).toBe(404);
  });
});
