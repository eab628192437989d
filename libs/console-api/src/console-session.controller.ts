import { Body, Controller, Delete, Get, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '@cdp/contracts';
import { Auth } from '@cdp/http-common';
import { ConsoleSessionGuard, requireSameOrigin, type ConsoleRequest } from './console-session.guard.js';
import { ConsoleSessions, type ConsoleSession } from './console-sessions.service.js';
import { ConsoleStreams } from './console-streams.js';
import { clearedCookieHeader, sessionCookieHeader } from './session-cookie.js';

export interface SessionView {
  account: { name: string; tracker_id: string };
  /** Sent back in `x-csrf-token` on every state-changing call; kept in the page's memory only. */
  csrf: string;
  expires_at: string;
}

function view(session: ConsoleSession): SessionView {
  return {
    account: { name: session.account.name, tracker_id: session.account.trackerId },
    csrf: session.csrf,
    expires_at: new Date(session.expiresAt).toISOString(),
  };
}

function secure(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}

/** Signing in and out of the console. */
@ApiExcludeController()
@Auth('none')
@Controller('console/api/session')
export class ConsoleSessionController {
  constructor(
    private readonly sessions: ConsoleSessions,
    private readonly streams: ConsoleStreams,
  ) {}

  /**
   * `{private_key}` → a session cookie. Only the console's own page sends `x-cdp-console` (a header a
   * cross-site form cannot set, and a cross-site script cannot send without a preflight this server refuses).
   */
  @Post()
  @HttpCode(201)
  async signIn(
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionView> {
    requireSameOrigin(request);
    if (request.headers['x-cdp-console'] !== '1') throw ApiError.forbidden('sign in from the console page');
    const key =
      typeof body === 'object' && body !== null ? (body as { private_key?: unknown }).private_key : undefined;
    const { cookie, session } = await this.sessions.signIn(key);
    void reply.header(
      'set-cookie',
      sessionCookieHeader(cookie, Math.floor(this.sessions.ttlMs / 1000), secure(request)),
    );
    return view(session);
  }

  @Get()
  @UseGuards(ConsoleSessionGuard)
  current(@Req() request: ConsoleRequest): SessionView {
    return view(request.consoleSession!);
  }

  /** Ends the session for every replica, closes its streams here, and clears the cookie. */
  @Delete()
  @UseGuards(ConsoleSessionGuard)
  async signOut(
    @Req() request: ConsoleRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ signed_out: true }> {
    const session = request.consoleSession!;
    await this.sessions.signOut(session.sid);
    this.streams.closeSession(session.sid);
    void reply.header('set-cookie', clearedCookieHeader(secure(request)));
    return { signed_out: true };
  }
}
