import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { envelope } from '@cdp/contracts';

/**
 * Nothing but this server's own files: no inline script or style, no other origin, no framing. Event
 * values reach the page as JSON and are rendered as text; this is the second line if one ever were not.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The built page (npm run build: console/ bundled by esbuild into dist/console). */
const ASSETS: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'index.html': 'text/html; charset=utf-8',
};

/**
 * Serves the console's page under /console (every path but /console/api is the one page; it routes in
 * the browser) and puts the security headers on every /console answer.
 */
@Injectable()
export class ConsolePages implements OnModuleInit {
  private readonly files = new Map<string, Promise<Buffer>>();

  constructor(
    private readonly adapter: HttpAdapterHost,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    fastify.addHook('onSend', (request, reply, payload, done) => {
      if (request.url === '/console' || request.url.startsWith('/console/')) {
        void reply.headers({
          'content-security-policy': CONSOLE_CSP,
          'x-content-type-options': 'nosniff',
          'x-frame-options': 'DENY',
          'referrer-policy': 'no-referrer',
          'cross-origin-opener-policy': 'same-origin',
        });
        if (request.url.startsWith('/console/api/')) void reply.header('cache-control', 'no-store');
      }
      done(null, payload);
    });
    fastify.get('/console/assets/:file', (request, reply) =>
      this.send(reply, (request.params as { file: string }).file),
    );
    fastify.get('/console', (_request, reply) => this.send(reply, 'index.html'));
    fastify.get('/console/*', (request: FastifyRequest, reply: FastifyReply) => {
      if (request.url.startsWith('/console/api/')) {
        return reply.code(404).send(envelope(404, { message: `no console call ${request.url}` }));
      }
      return this.send(reply, 'index.html');
    });
  }

  private async send(reply: FastifyReply, file: string): Promise<FastifyReply> {
    const type = ASSETS[file];
    if (!type) return reply.code(404).send(envelope(404, { message: `no console file ${file}` }));
    let body: Buffer;
    try {
      body = await this.read(file);
    } catch {
      return reply
        .code(503)
        .send(envelope(503, { message: 'the console is not built here: run npm run build' }));
    }
    return reply
      .header('content-type', type)
      .header('cache-control', file === 'index.html' ? 'no-store' : 'no-cache')
      .send(body);
  }

  private read(file: string): Promise<Buffer> {
    let found = this.files.get(file);
    if (!found) {
      found = readFile(join(this.config.console.assetsDir, file));
      this.files.set(file, found);
      found.catch(() => this.files.delete(file));
    }
    return found;
  }
}
