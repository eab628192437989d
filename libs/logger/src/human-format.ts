/**
 * Log lines for a person at a terminal: `time LEVEL app [context] message key=value …`, one line per
 * record, an error's stack indented below it. The same pino records as the JSON lines, only rendered.
 */

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
/** Fields the line's head shows, or that say nothing at a terminal (the pid, pino's own). */
const SHOWN_IN_HEAD = new Set(['level', 'time', 'msg', 'app', 'context', 'pid', 'hostname']);

/** Renders one pino JSON line; a line that is not a JSON object is passed through unchanged. */
export function formatLogLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = typeof record.time === 'string' ? record.time.slice(11, 23) : '';
  const level = (LEVELS[Number(record.level)] ?? String(record.level)).padEnd(5);
  const head = [
    time,
    level,
    typeof record.app === 'string' ? record.app : undefined,
    typeof record.context === 'string' && record.context !== '' ? `[${record.context}]` : undefined,
    typeof record.msg === 'string' ? record.msg : undefined,
  ];
  const fields: string[] = [];
  let stack: string | undefined;
  for (const [key, value] of Object.entries(record)) {
    if (SHOWN_IN_HEAD.has(key) || value === undefined) continue;
    if (key === 'trace' && typeof value === 'string') {
      stack ??= value;
      continue;
    }
    if (isError(value)) {
      fields.push(`${key}=${quote(value.message)}`);
      stack = value.stack;
    } else fields.push(`${key}=${quote(value)}`);
  }
  const line = [...head.filter((part) => part !== undefined && part !== ''), ...fields].join(' ');
  return stack ? `${line}\n${indent(stack)}\n` : `${line}\n`;
}

/** A pino destination writing human lines to `out` (process.stdout). */
export function humanDestination(out: { write(text: string): unknown }): { write(json: string): void } {
  return { write: (json) => void out.write(formatLogLine(json)) };
}

/** pino's serialised error (`{type, message, stack}`). */
function isError(value: unknown): value is { message: string; stack: string } {
  if (typeof value !== 'object' || value === null) return false;
  const { message, stack } = value as { message?: unknown; stack?: unknown };
  return typeof message === 'string' && typeof stack === 'string';
}

/** Bare when it reads unambiguously, else JSON (strings with spaces quoted, objects inline). */
function quote(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
