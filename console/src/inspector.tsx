import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import {
  baseRequestId,
  asCurl,
  matches,
  pretty,
  type Entry,
  type Filters,
  type Notice,
  type Row,
} from './entries.js';

const MAX_ROWS = 500;
/** Resolutions waiting for their verdict; one whose verdict was sampled out never finds it, so old ones go. */
const MAX_PENDING = 1000;

function holdResolution(pending: Map<string, Entry>, key: string, entry: Entry): void {
  pending.set(key, entry);
  if (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value!);
}

export function InspectorPage({ publicKey }: { publicKey: string }) {
  const [rows, setRows] = useState<Row[]>([]);
  const [paused, setPaused] = useState(false);
  const [held, setHeld] = useState(0);
  const [notice, setNotice] = useState<Notice | null>(null);
  const [connected, setConnected] = useState(false);
  const [filters, setFilters] = useState<Filters>({ typeAction: '', identifier: '', verdict: 'all' });
  const pausedRef = useRef(false);
  const queue = useRef<Row[]>([]);
  const pending = useRef(new Map<string, Entry>());

  useEffect(() => {
    const source = new EventSource('/console/api/inspector/stream');
    source.onopen = () => setConnected(true);
    source.onerror = () => setConnected(false);
    source.onmessage = (message: MessageEvent<string>) => {
      let entry: Entry;
      try {
        entry = JSON.parse(message.data) as Entry;
      } catch {
        return;
      }
      if (entry.type === 'notice') return setNotice(entry);
      if (entry.type === 'resolution') {
        const key = `${baseRequestId(entry.request_id)}#${entry.index}`;
        const attach = (list: Row[]) => {
          const i = list.findIndex((r) => r.verdict.id === key);
          if (i < 0) return false;
          list[i] = { ...list[i]!, resolution: entry };
          return true;
        };
        if (attach(queue.current)) return;
        setRows((current) => {
          const next = [...current];
          if (!attach(next)) holdResolution(pending.current, key, entry);
          return next;
        });
        return;
      }
      const early = pending.current.get(entry.id);
      pending.current.delete(entry.id);
      const row: Row =
        early?.type === 'resolution' ? { verdict: entry, resolution: early } : { verdict: entry };
      if (pausedRef.current) {
        queue.current.unshift(row);
        queue.current.length = Math.min(queue.current.length, MAX_ROWS);
        setHeld(queue.current.length);
      } else {
        setRows((current) => [row, ...current].slice(0, MAX_ROWS));
      }
    };
    return () => source.close();
  }, []);

  const pause = () => {
    pausedRef.current = true;
    setPaused(true);
  };
  const resume = () => {
    pausedRef.current = false;
    setPaused(false);
    const waiting = queue.current;
    queue.current = [];
    setHeld(0);
    setRows((current) => [...waiting, ...current].slice(0, MAX_ROWS));
  };
  const clear = () => {
    queue.current = [];
    pending.current.clear();
    setHeld(0);
    setRows([]);
  };
  const shown = useMemo(() => rows.filter((r) => matches(r, filters)), [rows, filters]);

  return (
    <section class="inspector" aria-label="Event inspector">
      <div class="toolbar">
        <span class={connected ? 'live on' : 'live'} data-testid="live">
          {connected ? (paused ? 'paused' : 'live') : 'connecting…'}
        </span>
        {paused ? (
          <button data-testid="resume" onClick={resume}>
            Resume{held ? ` (${held} new)` : ''}
          </button>
        ) : (
          <button data-testid="pause" onClick={pause}>
            Pause
          </button>
        )}
        <button data-testid="clear" onClick={clear}>
          Clear
        </button>
        <label>
          Type / action
          <input
            data-testid="filter-type"
            value={filters.typeAction}
            placeholder="e.g. product add_to_cart"
            onInput={(e) => setFilters({ ...filters, typeAction: e.currentTarget.value })}
          />
        </label>
        <label>
          Identifier
          <input
            data-testid="filter-identifier"
            value={filters.identifier}
            placeholder="email, customer id…"
            onInput={(e) => setFilters({ ...filters, identifier: e.currentTarget.value })}
          />
        </label>
        <label>
          Verdict
          <select
            data-testid="filter-verdict"
            value={filters.verdict}
            onChange={(e) => setFilters({ ...filters, verdict: e.currentTarget.value as Filters['verdict'] })}
          >
            <option value="all">all</option>
            <option value="accepted">accepted</option>
            <option value="rejected">rejected</option>
          </select>
        </label>
      </div>
      {notice && (
        <p class={notice.sampling ? 'notice sampling' : 'notice'} role="status" data-testid="notice">
          {notice.message}
        </p>
      )}
      {shown.length === 0 ? (
        <p class="empty">
          {rows.length ? 'No record matches the filters.' : 'Waiting for records sent to this account…'}
        </p>
      ) : (
        <ol class="rows" data-testid="rows">
          {shown.map((row) => (
            <RowView key={row.verdict.id} row={row} publicKey={publicKey} />
          ))}
        </ol>
      )}
    </section>
  );
}

/** The identifier values of a record (or of a rejected request's records), for the row's headline. */
function identifiersOf(body: unknown): string {
  const records: unknown[] = Array.isArray(body) ? (body as unknown[]) : [body];
  const values = new Set<string>();
  for (const record of records.slice(0, 5)) {
    if (typeof record !== 'object' || record === null) continue;
    // events carry `identifiers`, profiles `attributes`; v2 and objects name them at the top level
    const r = record as { identifiers?: unknown; attributes?: unknown };
    const ids = r.identifiers ?? r.attributes ?? record;
    if (typeof ids !== 'object' || ids === null) continue;
    for (const [name, value] of Object.entries(ids as Record<string, unknown>)) {
      if (typeof value !== 'string') continue;
      if (/^(email|customer_id|vuid)$|_push_tokens$|^svc_alias_/.test(name)) values.add(value);
    }
  }
  return [...values].slice(0, 3).join(', ');
}

function RowView({ row, publicKey }: { row: Row; publicKey: string }) {
  const [open, setOpen] = useState(false);
  const [copied, setCopied] = useState<string | null>(null);
  const v = row.verdict;
  const body = v.body as Record<string, unknown> | null;
  const what =
    typeof body === 'object' && body !== null && typeof body.type === 'string'
      ? `${body.type}${typeof body.action === 'string' ? ` · ${body.action}` : ''}`
      : v.kind;
  const who = identifiersOf(v.body);
  const copy = (text: string) => {
    setCopied(text);
    void navigator.clipboard?.writeText(text).catch(() => undefined);
  };
  return (
    <li class={`row ${v.verdict}`} data-testid="row" data-verdict={v.verdict}>
      <button class="row-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span class={`badge ${v.verdict}`}>
          {v.verdict === 'accepted' ? `${v.status} accepted` : `${v.status} rejected`}
        </span>
        <span class="what">{what}</span>
        {who && <span class="who">{who}</span>}
        <span class="route">{v.route}</span>
        <time>{v.at.slice(11, 23)}</time>
      </button>
      <div class="verdict-detail">
        {row.resolution && (
          <span data-testid="resolution">
            customer <code>{row.resolution.customer_id}</code>
            {row.resolution.created ? ' · created' : ''}
            {row.resolution.merged.length ? ` · merged ${row.resolution.merged.join(', ')}` : ''}
          </span>
        )}
        {v.dropped?.length ? <span class="dropped">dropped: {v.dropped.join(', ')}</span> : null}
        {v.sampled_every ? <span class="sampled">sample: 1 in {v.sampled_every}</span> : null}
        {v.message && <span class="reason">{v.message}</span>}
      </div>
      {v.invalids?.length ? (
        <ul class="invalids" data-testid="invalids">
          {v.invalids.map((i, n) => (
            <li key={n}>
              {i.event !== undefined ? <span class="index">record {i.event}</span> : null}
              <code>{Array.isArray(i.field) ? i.field.join(' | ') : String(i.field)}</code> {i.reason}
            </li>
          ))}
        </ul>
      ) : null}
      {open && (
        <div class="json">
          <div class="actions">
            <button onClick={() => copy(pretty(v.body))}>Copy JSON</button>
            {/* A bulk file's record came from a file, not a request: there is no call to repeat. */}
            {!v.route.startsWith('bulk ') && (
              <button onClick={() => copy(asCurl(row, location.origin, publicKey))}>Copy as curl</button>
            )}
          </div>
          <pre data-testid="json">{pretty(v.body)}</pre>
          {copied !== null && (
            <textarea readOnly class="copied" data-testid="copied" aria-label="Copied text" value={copied} />
          )}
        </div>
      )}
    </li>
  );
}
