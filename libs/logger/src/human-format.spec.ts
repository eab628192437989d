import { pino } from 'pino';
import { formatLogLine } from './human-format.js';
import { logOutput, NestPinoLogger } from './logger.js';

/** A real pino logger whose JSON lines are kept, as createLogger builds it. */
function recorder(level = 'info') {
  const lines: string[] = [];
  const logger = pino(
    { level, base: { pid: 1 }, timestamp: pino.stdTimeFunctions.isoTime },
    { write: (line: string) => void lines.push(line) },
  );
  return { logger, lines };
}

describe('formatLogLine', () => {
  it('renders a record as time, level, app, context, message and key=value', () => {
    const { logger, lines } = recorder();
    logger.child({ app: 'cdp' }).info({ context: 'Bus', port: 3000, dir: '/tmp/a b' }, 'ready');
    const line = formatLogLine(lines[0]!);
    expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO  cdp \[Bus\] ready port=3000 dir="\/tmp\/a b"\n$/);
    expect(line).not.toContain('pid');
  });

  it("puts an error's message on the line and its stack indented below", () => {
    const { logger, lines } = recorder();
    logger.error({ err: new Error('disk full') }, 'write failed');
    const [head, ...stack] = formatLogLine(lines[0]!).trimEnd().split('\n');
    expect(head).toMatch(/ERROR write failed err="disk full"$/);
    expect(stack[0]).toBe('    Error: disk full');
    expect(stack.length).toBeGreaterThan(1);
  });

  it('passes through a line that is not JSON', () => {
    expect(formatLogLine('plain text')).toBe('plain text\n');
  });
});

describe('NestPinoLogger', () => {
  it("keeps Nest's per-route and per-module start-up lines out of the info level", () => {
    const { logger, lines } = recorder('info');
    const nest = new NestPinoLogger(logger);
    nest.log('Mapped {/v3/events, POST} route', 'RouterExplorer');
    nest.log('EventsController {/v3/events}:', 'RoutesResolver');
    nest.log('DriversModule dependencies initialized', 'InstanceLoader');
    nest.log('Nest application successfully started', 'NestApplication');
    expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual([
      'Nest application successfully started',
    ]);
  });

  it('still shows them at debug level', () => {
    const { logger, lines } = recorder('debug');
    new NestPinoLogger(logger).log('Mapped {/v3/events, POST} route', 'RouterExplorer');
    expect(lines).toHaveLength(1);
  });
});

describe('logOutput', () => {
  it('is human on a terminal and JSON elsewhere unless LOG_FORMAT says', () => {
    expect(logOutput('auto', true)).toBe('pretty');
    expect(logOutput('auto', false)).toBe('json');
    expect(logOutput('json', true)).toBe('json');
    expect(logOutput('pretty', false)).toBe('pretty');
  });
});
