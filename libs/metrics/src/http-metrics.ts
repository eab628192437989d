import type { FastifyInstance } from 'fastify';
import type { Metrics } from './metrics.js';

/**
 * Counts every answer by method, route pattern (never the raw URL: ids in paths would make a series
 * per customer) and status, and observes its latency. One hook, run after the answer is sent.
 */
export function observeHttp(fastify: FastifyInstance, metrics: Metrics): void {
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: request.method, route, status: reply.statusCode });
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
}
