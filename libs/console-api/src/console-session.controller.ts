import { Body, Controller, Delete, Get, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Auth } from '@cdp/http-common';
import { EnvelopeValidation } from '@cdp/http-api/validation';
import { ConsolePageGuard, ConsoleSessionGuard, type ConsoleRequest } from './console-session.guard.js';
import { ConsoleSessions, type ConsoleSession } from './console-sessions.service.js';
import { ConsoleStreams } from './console-streams.js';
import { clearedCookieHeader, sessionCookieHeader } from './session-cookie.js';
import { SignInDto } from './sign-in.dto.js';

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
   * `{private_key}` → a session cookie. Only the console's own page may ask (ConsolePageGuard, which runs
   * before the body is looked at); the body is checked by the control plane's ValidationPipe.
   */
  @Post()
  @HttpCode(201)
  @UseGuards(ConsolePageGuard)
  async signIn(
    @Body(EnvelopeValidation) body: SignInDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionView> {
    const { cookie, session } = await this.sessions.signIn(body.private_key);
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
