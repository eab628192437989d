import { Controller, Get, Req, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Auth } from '@cdp/http-common';
import { Inspector, type InspectorEntry } from '@cdp/inspector';
import { ConsoleSessionGuard, type ConsoleRequest } from './console-session.guard.js';
import { ConsoleSessions } from './console-sessions.service.js';
import { ConsoleStreams } from './console-streams.js';
import { SESSION_COOKIE, readCookie } from './session-cookie.js';

/** How often an open stream re-checks its session (signed out on another replica, key past its grace). */
const RECHECK_MS = 5_000;
/** Entries an open stream may have waiting on a slow page before it drops them (and says so). */
const MAX_BUFFERED_BYTES = 1 << 20;

/**
 * The event inspector's live feed as server-sent events. While it is open the account is inspected
 * (the API offers verdicts, the processor resolutions); when it closes, inspecting stops.
 */
@ApiExcludeController()
@Auth('none')
@UseGuards(ConsoleSessionGuard)
@Controller('console/api/inspector')
export class ConsoleInspectorController {
  constructor(
    private readonly inspector: Inspector,
    private readonly sessions: ConsoleSessions,
    private readonly streams: ConsoleStreams,
  ) {}

  @Get('stream')
  stream(@Req() request: ConsoleRequest, @Res() reply: FastifyReply): void {
    const session = request.consoleSession!;
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-accel-buffering': 'no',
      'z-request-id': request.id,
    });
    raw.write('retry: 2000\n\n');
    let dropped = 0;
    const write = (entry: InspectorEntry) => {
      if (raw.writableLength > MAX_BUFFERED_BYTES) {
        dropped++;
        return;
      }
      if (dropped > 0) {
        const notice = { type: 'notice', at: new Date().toISOString(), sampling: null };
        const message = `${dropped} records were not shown: the page read them too slowly`;
        raw.write(`data: ${JSON.stringify({ ...notice, message })}\n\n`);
        dropped = 0;
      }
      raw.write(`data: ${JSON.stringify(entry)}\n\n`);
    };
    const view = this.inspector.open(session.account.id, write);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      view.close();
      forget();
      raw.end();
    };
    const forget = this.streams.add(session.sid, close);
    const timer = setInterval(() => {
      raw.write(': keep-alive\n\n');
      this.sessions.check(readCookie(request.headers.cookie, SESSION_COOKIE), Date.now()).catch(close);
    }, RECHECK_MS);
    timer.unref();
    raw.on('close', close);
  }
}
