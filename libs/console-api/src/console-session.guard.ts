import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '@cdp/contracts';
import { ConsoleSessions, type ConsoleSession } from './console-sessions.service.js';
import { SESSION_COOKIE, csrfMatches, readCookie } from './session-cookie.js';

export type ConsoleRequest = FastifyRequest & { consoleSession?: ConsoleSession };

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * Every console API call: a live session (ConsoleSessions.check), and on a state-changing call, the
 * session's CSRF token in `x-csrf-token` and, when the browser names it, an Origin of this server. The
 * cookie is SameSite=Strict as well; the token is what a forged cross-site form could never send.
 */
@Injectable()
export class ConsoleSessionGuard implements CanActivate {
  constructor(private readonly sessions: ConsoleSessions) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<ConsoleRequest>();
    const session = await this.sessions.check(readCookie(request.headers.cookie, SESSION_COOKIE));
    if (!SAFE_METHODS.has(request.method)) {
      requireSameOrigin(request);
      const sent = request.headers['x-csrf-token'];
      if (!csrfMatches(this.sessions.csrfSecret(), session.sid, Array.isArray(sent) ? sent[0] : sent)) {
        throw ApiError.forbidden('missing or wrong x-csrf-token: reload the console');
      }
    }
    request.consoleSession = session;
    return true;
  }
}

/**
 * Signing in: only from the console's own page, which sends `x-cdp-console` (a header a cross-site form
 * cannot set, and a cross-site script cannot send without a preflight this server refuses). A guard, so
 * that a request from elsewhere is refused before its body is even validated.
 */
@Injectable()
export class ConsolePageGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    requireSameOrigin(request);
    if (request.headers['x-cdp-console'] !== '1') throw ApiError.forbidden('sign in from the console page');
    return true;
  }
}

/** A browser names the page's origin on every cross-site call: it must be this server. */
export function requireSameOrigin(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  // The host alone: behind a proxy that ends TLS, this server sees http while the page says https.
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  if (!host || host !== request.headers.host)
    throw ApiError.forbidden('cross-origin console calls are refused');
}
