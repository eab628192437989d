import { useEffect, useState } from 'preact/hooks';
import { call, CallError } from './api.js';
import { NewObjectForm, SubmitWithAnswer } from './new-object.js';

function useLoad<T>(path: string, version = 0): { data?: T; error?: string; reload: () => void } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    call<T>('GET', path).then(
      (d) => setData(d),
      (e: Error) => setError(e.message),
    );
  }, [path, version, tick]);
  return {
    ...(data !== undefined ? { data } : {}),
    ...(error ? { error } : {}),
    reload: () => setTick(tick + 1),
  };
}

interface KeyView {
  id: string;
  created_at: string;
  state: 'active' | 'revoked' | 'expired';
  expires_at?: string;
  grace_left_seconds?: number;
  this_session: boolean;
}
interface AccountView {
  name: string;
  public_key: string;
  created_at: string;
  keys: KeyView[];
}

function graceLeft(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return `${h} h ${m} min left`;
}

/** An in-page confirmation (no window.confirm): the action runs only from its own button. */
function Confirm(props: { text: string; action: string; onYes: () => void; onNo: () => void }) {
  return (
    <div class="confirm" role="alertdialog" aria-label={props.text}>
      <p>{props.text}</p>
      <button class="danger" data-testid="confirm-yes" onClick={props.onYes} autoFocus>
        {props.action}
      </button>
      <button onClick={props.onNo}>Cancel</button>
    </div>
  );
}

export function KeysPage() {
  const { data, error, reload } = useLoad<AccountView>('account');
  const [asking, setAsking] = useState<{ kind: 'rotate' } | { kind: 'revoke'; id: string } | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  if (error) return <p class="error">{error}</p>;
  if (!data) return <p>Loading…</p>;
  const rotate = async () => {
    setAsking(null);
    try {
      const r = await call<{ private_key: string }>('POST', 'keys');
      setSecret(r.private_key);
      reload();
    } catch (e) {
      setFailure((e as Error).message);
    }
  };
  const revoke = async (id: string) => {
    setAsking(null);
    try {
      await call('DELETE', `keys/${encodeURIComponent(id)}`);
      reload();
    } catch (e) {
      setFailure((e as Error).message);
    }
  };
  return (
    <section aria-label="Keys">
      <h2>Public key</h2>
      <p>
        Sends data, from browsers and apps too: <code data-testid="public-key">{data.public_key}</code>
      </p>
      <h2>Private keys</h2>
      <table class="table" data-testid="keys">
        <thead>
          <tr>
            <th>Key</th>
            <th>Created</th>
            <th>State</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data.keys.map((k) => (
            <tr key={k.id} data-testid="key" data-state={k.state}>
              <td>
                <code>{k.id}</code>
                {k.this_session ? <span class="tag">this session</span> : null}
              </td>
              <td>{k.created_at.slice(0, 16).replace('T', ' ')}</td>
              <td>
                {k.state === 'active'
                  ? 'active'
                  : k.state === 'revoked'
                    ? `revoked · ${graceLeft(k.grace_left_seconds ?? 0)}`
                    : 'expired'}
              </td>
              <td>
                {k.state === 'active' ? (
                  <button onClick={() => setAsking({ kind: 'revoke', id: k.id })}>Revoke…</button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        <button data-testid="rotate" onClick={() => setAsking({ kind: 'rotate' })}>
          Rotate private key…
        </button>
      </p>
      {asking?.kind === 'rotate' && (
        <Confirm
          text="Issue a new private key? The keys in use now keep working for 12 hours."
          action="Rotate"
          onYes={() => void rotate()}
          onNo={() => setAsking(null)}
        />
      )}
      {asking?.kind === 'revoke' && (
        <Confirm
          text={`Revoke key ${asking.id}? It keeps working for 12 hours, then stops.`}
          action="Revoke"
          onYes={() => void revoke(asking.id)}
          onNo={() => setAsking(null)}
        />
      )}
      {secret && (
        <div class="secret" role="status">
          <p>The new private key, shown this once — store it now:</p>
          <code data-testid="new-secret">{secret}</code>
          <button onClick={() => setSecret(null)}>I have stored it</button>
        </div>
      )}
      {failure && <p class="error">{failure}</p>}
    </section>
  );
}

interface PlanView {
  family: string;
  plan: string;
  rate: number | string;
  default_rate: number | string;
}

function rateText(rate: number | string): string {
  return typeof rate === 'number' ? `${rate} requests/s` : rate === 'no_access' ? 'no access' : rate;
}

export function ApisPage() {
  const { data, error } = useLoad<{ families: PlanView[]; events_retention_days: number | null }>('plans');
  if (error) return <p class="error">{error}</p>;
  if (!data) return <p>Loading…</p>;
  const days = data.events_retention_days;
  return (
    <section aria-label="APIs">
      <p>
        Each API family's usage plan and limit, and how long events are kept. The operator changes them
        through the admin API.
      </p>
      <p data-testid="retention">
        Events are kept {days === null ? 'forever' : `for ${days} day${days === 1 ? '' : 's'}`}.
      </p>
      <table class="table" data-testid="plans">
        <thead>
          <tr>
            <th>API</th>
            <th>Plan</th>
            <th>Limit</th>
            <th>Default</th>
          </tr>
        </thead>
        <tbody>
          {data.families.map((f) => (
            <tr key={f.family} data-testid="plan" data-family={f.family} data-plan={f.plan}>
              <td>{f.family}</td>
              <td>
                <span class={`plan ${f.plan === 'No Access' ? 'blocked' : ''}`}>{f.plan}</span>
              </td>
              <td>{rateText(f.rate)}</td>
              <td>{rateText(f.default_rate)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

interface FieldView {
  name: string;
  display_name: string;
  type: string;
  created_by: string;
  primary_key: boolean;
}
interface RelationView {
  name: string;
  display_name: string;
  child_object: string;
}
interface ObjectView {
  name: string;
  display_name: string;
  created_by: string;
  fields: FieldView[];
  relations: RelationView[];
}

const FIELD_TYPES = ['string', 'text', 'number', 'timestamp', 'boolean'];

export function ObjectsPage() {
  const { data, error, reload } = useLoad<ObjectView[]>('objects');
  const [selected, select] = useState('customers');
  const [form, setForm] = useState({ name: '', display_name: '', type: 'string' });
  const [message, setMessage] = useState<string | null>(null);
  /** Another object: the field form's last answer was about the previous one. */
  const setSelected = (name: string) => {
    select(name);
    setMessage(null);
  };
  if (error) return <p class="error">{error}</p>;
  if (!data) return <p>Loading…</p>;
  const object = data.find((o) => o.name === selected) ?? data[0];
  const create = async (e: Event) => {
    e.preventDefault();
    if (!object) return;
    try {
      await call('POST', `objects/${encodeURIComponent(object.name)}/fields`, form);
      setMessage(`Field ${object.name}.${form.name} created.`);
      setForm({ name: '', display_name: '', type: 'string' });
      reload();
    } catch (err) {
      setMessage(err instanceof CallError ? err.message : String(err));
    }
  };
  return (
    <section class="objects" aria-label="Objects and fields">
      <nav class="object-list" aria-label="Objects">
        {data.map((o) => (
          <button
            key={o.name}
            class={o.name === object?.name ? 'current' : ''}
            aria-current={o.name === object?.name}
            onClick={() => setSelected(o.name)}
          >
            {o.display_name} <small>{o.created_by === 'svc' ? 'built-in' : 'custom'}</small>
          </button>
        ))}
      </nav>
      {object && (
        <div class="object">
          <h2>
            {object.display_name} <code>{object.name}</code>
          </h2>
          <table class="table" data-testid="fields">
            <thead>
              <tr>
                <th>Field</th>
                <th>Display name</th>
                <th>Type</th>
                <th>Created by</th>
              </tr>
            </thead>
            <tbody>
              {object.fields.map((f) => (
                <tr key={f.name} data-testid="field" data-name={f.name}>
                  <td>
                    <code>{f.name}</code>
                    {f.primary_key ? <span class="tag">primary</span> : null}
                  </td>
                  <td>{f.display_name}</td>
                  <td>{f.type}</td>
                  <td>{f.created_by}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {object.relations.length ? (
            <>
              <h3>Relations</h3>
              <ul data-testid="relations">
                {object.relations.map((r) => (
                  <li key={r.name}>
                    <code>{r.name}</code> → {r.child_object}
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          <form class="new-field" onSubmit={(e) => void create(e)} data-testid="new-field">
            <h3>New field on {object.display_name}</h3>
            <label>
              Name
              <input
                name="name"
                required
                value={form.name}
                onInput={(e) => setForm({ ...form, name: e.currentTarget.value })}
              />
            </label>
            <label>
              Display name
              <input
                name="display_name"
                required
                value={form.display_name}
                onInput={(e) => setForm({ ...form, display_name: e.currentTarget.value })}
              />
            </label>
            <label>
              Type
              <select
                name="type"
                value={form.type}
                onChange={(e) => setForm({ ...form, type: e.currentTarget.value })}
              >
                {FIELD_TYPES.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
            </label>
            <SubmitWithAnswer label="Create field" answer={message} testId="field-message" />
          </form>
        </div>
      )}
      <NewObjectForm
        onCreated={(name) => {
          setSelected(name);
          reload();
        }}
      />
    </section>
  );
}

interface ListView {
  list_id: string;
  name: string;
  created_at?: string;
  /** Current subscribers; null for svc_all (the global opt-in is each profile's, not counted). */
  subscribers: number | null;
}

export function ListsPage() {
  const { data, error } = useLoad<ListView[]>('lists');
  if (error) return <p class="error">{error}</p>;
  if (!data) return <p>Loading…</p>;
  return (
    <section aria-label="Lists">
      <table class="table" data-testid="lists">
        <thead>
          <tr>
            <th>List</th>
            <th class="num">Subscribers</th>
            <th>Id</th>
            <th>Created</th>
          </tr>
        </thead>
        <tbody>
          {data.map((l) => (
            <tr key={l.list_id} data-testid="list" data-list={l.list_id}>
              <td>{l.name}</td>
              <td
                class="num"
                data-testid="subscribers"
                title={l.subscribers === null ? 'global opt-in' : undefined}
              >
                {l.subscribers === null ? '—' : l.subscribers}
              </td>
              <td>
                <code>{l.list_id}</code>
              </td>
              <td>{l.created_at?.slice(0, 10) ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

interface ActivityView {
  id: string;
  name: string;
  path: string;
  data_type: string | null;
  format: string | null;
  size: number;
  state: 'pending' | 'running' | 'completed' | 'rejected' | 'failed';
  records: { read: number; loaded: number; invalid: number; dropped: number };
  dropped_fields: string[];
  progress: { records: number; bytes: number; size: number };
  errors: { line: number; field: string; reason: string }[];
  rejection_reason?: string;
  rejected_records_file?: string;
  created_at: string;
  duration_ms?: number;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A file still loading is looked at again this often: its progress moves while the page is open. */
const ACTIVITY_REFRESH_MS = 2000;

/** The bulk-file activity log (`GET /v3/activity`): each file with its state, counts, errors and progress. */
export function ActivityPage() {
  const { data, error, reload } = useLoad<{ activity: ActivityView[] }>('activity');
  const running = data?.activity.some((a) => a.state === 'pending' || a.state === 'running') ?? false;
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(reload, ACTIVITY_REFRESH_MS);
    return () => clearTimeout(timer);
  }, [data, running]);
  if (error) return <p class="error">{error}</p>;
  if (!data) return <p>Loading…</p>;
  if (data.activity.length === 0)
    return (
      <p class="empty">
        No file yet. Files dropped in the incoming bucket under the account's tracker id are loaded and listed
        here.
      </p>
    );
  return (
    <section aria-label="Activity log">
      <ul class="activity" data-testid="activity">
        {data.activity.map((a) => (
          <li key={a.id} class={`file ${a.state}`} data-testid="file" data-state={a.state}>
            <div class="file-head">
              <span class={`state ${a.state}`}>{a.state}</span>
              <code class="file-name">{a.name}</code>
              <span class="muted">
                {a.data_type ?? 'unknown type'}
                {a.format ? ` · ${a.format}` : ''} · {bytes(a.size)}
              </span>
              <time class="muted">{a.created_at.slice(0, 19).replace('T', ' ')}</time>
            </div>
            <dl class="counts" data-testid="counts">
              <div>
                <dt>read</dt>
                <dd>{a.records.read}</dd>
              </div>
              <div>
                <dt>loaded</dt>
                <dd>{a.records.loaded}</dd>
              </div>
              <div>
                <dt>invalid</dt>
                <dd>{a.records.invalid}</dd>
              </div>
              <div>
                <dt>dropped</dt>
                <dd>{a.records.dropped}</dd>
              </div>
              {a.duration_ms !== undefined && (
                <div>
                  <dt>took</dt>
                  <dd>{(a.duration_ms / 1000).toFixed(1)} s</dd>
                </div>
              )}
            </dl>
            {(a.state === 'running' || a.state === 'pending') && (
              <div class="progress" data-testid="progress">
                <progress max={a.progress.size || 1} value={a.progress.bytes} />
                <span class="muted">
                  {a.progress.records} records · {bytes(a.progress.bytes)} of {bytes(a.progress.size)}
                </span>
              </div>
            )}
            {a.rejection_reason && (
              <p class="reason" data-testid="rejection">
                {a.state === 'failed' ? 'Failed: ' : 'Rejected: '}
                {a.rejection_reason}
              </p>
            )}
            {a.dropped_fields.length > 0 && (
              <p class="muted">Dropped columns: {a.dropped_fields.join(', ')}</p>
            )}
            {a.errors.length > 0 && (
              <details data-testid="errors">
                <summary>
                  {a.errors.length} error{a.errors.length === 1 ? '' : 's'}
                  {a.errors.length >= 100 ? ' (the first 100)' : ''}
                </summary>
                <ul class="file-errors">
                  {a.errors.map((e, n) => (
                    <li key={n}>
                      line {e.line} · <code>{e.field}</code> {e.reason}
                    </li>
                  ))}
                </ul>
                {a.rejected_records_file && (
                  <p class="muted">
                    Every invalid record with its reasons: <code>{a.rejected_records_file}</code>
                  </p>
                )}
              </details>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
