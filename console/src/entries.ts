/** What the inspector stream sends: the server's own types (type-only, so nothing of the lib is bundled). */
import type {
  InspectorEntry,
  InspectorNotice,
  InspectorResolution,
  InspectorVerdict,
} from '../../libs/inspector/src/inspector-entry.js';

export type Verdict = InspectorVerdict;
export type Resolution = InspectorResolution;
export type Notice = InspectorNotice;
export type Entry = InspectorEntry;

/** A shown row: a verdict and, once the processor resolved it, its customer. */
export interface Row {
  verdict: Verdict;
  resolution?: Resolution;
}

export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** A shell-safe single-quoted word. */
function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The request again, as a curl command with the public key (which may be public). */
export function asCurl(row: Row, origin: string, publicKey: string): string {
  const [method = 'POST', path = '/'] = row.verdict.route.split(' ');
  const keyHeader = path.startsWith('/v2/') ? `Svc-Tracker-Id: ${publicKey}` : `x-api-key: ${publicKey}`;
  const body = row.verdict.index === undefined ? row.verdict.body : [row.verdict.body];
  return [
    `curl -X ${method} ${quote(origin + path)}`,
    `  -H ${quote(keyHeader)}`,
    `  -H 'content-type: application/json'`,
    `  -d ${quote(JSON.stringify(body))}`,
  ].join(' \\\n');
}

export interface Filters {
  typeAction: string;
  identifier: string;
  verdict: 'all' | 'accepted' | 'rejected';
}

function field(body: unknown, name: string): string {
  if (typeof body !== 'object' || body === null) return '';
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
}

export function matches(row: Row, f: Filters): boolean {
  const v = row.verdict;
  if (f.verdict !== 'all' && v.verdict !== f.verdict) return false;
  if (f.typeAction.trim()) {
    const words = `${v.kind} ${field(v.body, 'type')} ${field(v.body, 'action')}`.toLowerCase();
    if (
      !f.typeAction
        .toLowerCase()
        .split(/\s+/)
        .filter(Boolean)
        .every((w) => words.includes(w))
    )
      return false;
  }
  if (f.identifier.trim()) {
    const text = JSON.stringify(v.body).toLowerCase() + ' ' + (row.resolution?.customer_id ?? '');
    if (!text.includes(f.identifier.trim().toLowerCase())) return false;
  }
  return true;
}

/** The request id a resolution names: a v2 entities request of several kinds adds `.<kind>`. */
export function baseRequestId(id: string): string {
  const dot = id.indexOf('.');
  return dot < 0 ? id : id.slice(0, dot);
}
