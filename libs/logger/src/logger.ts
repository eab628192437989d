import type { LoggerService } from '@nestjs/common';
import { pino, type Logger } from 'pino';
import { humanDestination } from './human-format.js';

/** `json`: one JSON object a line (collectors, pipes); `pretty`: one human line a record (a terminal). */
export type LogOutput = 'json' | 'pretty';

/** LOG_FORMAT's `auto` picks human lines when stdout is a terminal, JSON lines otherwise. */
export function logOutput(format: 'auto' | LogOutput, stdoutIsTerminal: boolean): LogOutput {
  if (format !== 'auto') return format;
  return stdoutIsTerminal ? 'pretty' : 'json';
}

/**
 * One structured logger for the process; Fastify's request loggers are children of it (they add reqId).
 * Both outputs carry the same records; `pretty` only renders them for a person.
 */
export function createLogger(level: string, output: LogOutput = 'json'): Logger {
  const options = { level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  return output === 'pretty' ? pino(options, humanDestination(process.stdout)) : pino(options);
}

/**
 * Nest's start-up chatter — a line per module initialised and per route mapped (over a hundred) — is
 * debug, so the lines a newcomer needs are not buried under it.
 */
const NEST_CHATTER = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

/** Lets Nest's own messages go through the same logger. */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  log(message: unknown, context?: string): void {
    if (context !== undefined && NEST_CHATTER.has(context)) this.logger.debug({ context }, String(message));
    else this.logger.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
}
