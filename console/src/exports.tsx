import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';
import { FormAnswerView, refusal, type FormAnswer } from './form-answer.js';

interface ExportView {
  id: string;
  state: string;
  path: string;
  requested_at: string;
  completed_at?: string;
  detail: { objects?: string[]; format?: string; select?: { object: string } };
  errors?: { object: string; reason: string }[];
  /** A finished export's files, named under its path. */
  files?: string[];
}
interface ObjectView {
  name: string;
  display_name: string;
  fields: { name: string }[];
}

/** While an export is pending or running, the list is looked at again this often. */
const WATCH_MS = 2000;
const running = (x: ExportView) => x.state === 'pending' || x.state === 'running';

/** Start an export (whole objects, or one filtered select), watch it run, download its files. */
export function ExportsPage() {
  const [list, setList] = useState<ExportView[]>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    call<ExportView[]>('GET', 'exports').then(setList, (e: Error) => setError(e.message));
  }, [tick]);
  useEffect(() => {
    if (!list?.some(running)) return;
    const timer = setTimeout(() => setTick((t) => t + 1), WATCH_MS);
    return () => clearTimeout(timer);
  }, [list]);
  return (
    <section aria-label="Exports">
      <StartExport onStarted={() => setTick((t) => t + 1)} />
      <h2>Exports</h2>
      {error && <p class="error">{error}</p>}
      {list && list.length === 0 && <p class="empty">No export yet.</p>}
      {list && list.length > 0 && (
        <table class="table exports" data-testid="exports">
          <thead>
            <tr>
              <th>Requested</th>
              <th>Objects</th>
              <th>State</th>
              <th>Files</th>
            </tr>
          </thead>
          <tbody>
            {list.map((x) => (
              <tr key={x.id} data-testid="export" data-state={x.state} data-id={x.id}>
                <td>{x.requested_at.slice(0, 16).replace('T', ' ')}</td>
                <td>
                  {x.detail.select
                    ? `select from ${x.detail.select.object}`
                    : (x.detail.objects ?? []).join(', ')}
                </td>
                <td>
                  {x.state.replace(/_/g, ' ')}
                  {x.errors?.map((e) => (
                    <div key={e.object} class="reason">
                      {e.object}: {e.reason}
                    </div>
                  ))}
                </td>
                <td>
                  <code>{x.path}/</code>
                  {x.files?.length ? (
                    <ul class="files" data-testid="export-files">
                      {x.files.map((f) => (
                        <li key={f}>
                          <Download id={x.id} file={f} />
                        </li>
                      ))}
                    </ul>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Asks for a short-lived link when clicked (never before: a link shown long ago would have expired). */
function Download({ id, file }: { id: string; file: string }) {
  const [error, setError] = useState<string>();
  const fetchLink = async () => {
    try {
      const { url } = await call<{ url: string }>(
        'GET',
        `exports/${encodeURIComponent(id)}/link?file=${encodeURIComponent(file)}`,
      );
      const a = document.createElement('a');
      a.href = url;
      a.download = file.split('/').pop() ?? file;
      a.rel = 'noopener';
      document.body.appendChild(a);
      a.click();
      a.remove();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <>
      <button class="link file" data-testid="download" title="Download" onClick={() => void fetchLink()}>
        {file}
      </button>
      {error && <span class="error">{error}</span>}
    </>
  );
}

/** The request body of `POST /v3/exports`, built by a form; the server checks it as that route does. */
function StartExport({ onStarted }: { onStarted: () => void }) {
  const [objects, setObjects] = useState<ObjectView[]>([]);
  const [mode, setMode] = useState<'objects' | 'select'>('objects');
  const [picked, setPicked] = useState<string[]>([]);
  const [format, setFormat] = useState('CSV');
  const [object, setObject] = useState('customers');
  const [fields, setFields] = useState('');
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState('');
  const [order, setOrder] = useState('asc');
  const [answer, setAnswer] = useState<FormAnswer>();
  useEffect(() => {
    call<ObjectView[]>('GET', 'objects').then(setObjects, () => undefined);
  }, []);
  const toggle = (name: string) =>
    setPicked((p) => (p.includes(name) ? p.filter((n) => n !== name) : [...p, name]));
  const submit = async (e: Event) => {
    e.preventDefault();
    let body: Record<string, unknown>;
    if (mode === 'objects') {
      body = { format, objects: picked };
    } else {
      let parsed: unknown = undefined;
      if (filter.trim()) {
        try {
          parsed = JSON.parse(filter);
        } catch {
          setAnswer({ ok: false, text: 'the filter is not JSON', invalids: [] });
          return;
        }
      }
      body = {
        format,
        select: {
          object,
          fields: fields
            .split(',')
            .map((f) => f.trim())
            .filter(Boolean),
          ...(parsed !== undefined ? { filter: parsed } : {}),
          ...(sort.trim() ? { sorts: [{ field: sort.trim(), order }] } : {}),
        },
      };
    }
    try {
      const record = await call<ExportView>('POST', 'exports', body);
      setAnswer({ ok: true, text: `Export ${record.id} started.`, invalids: [] });
      onStarted();
    } catch (err) {
      setAnswer(refusal(err));
    }
  };
  return (
    <form class="start-export" onSubmit={(e) => void submit(e)} data-testid="start-export">
      <h2>New export</h2>
      <fieldset>
        <legend>What</legend>
        <label>
          <input type="radio" name="mode" checked={mode === 'objects'} onChange={() => setMode('objects')} />
          Whole objects
        </label>
        <label>
          <input type="radio" name="mode" checked={mode === 'select'} onChange={() => setMode('select')} />A
          select (fields, filter, sort)
        </label>
      </fieldset>
      {mode === 'objects' ? (
        <fieldset data-testid="objects">
          <legend>Objects (none picked: every one)</legend>
          {objects.map((o) => (
            <label key={o.name}>
              <input type="checkbox" checked={picked.includes(o.name)} onChange={() => toggle(o.name)} />
              {o.display_name} <code>{o.name}</code>
            </label>
          ))}
        </fieldset>
      ) : (
        <fieldset data-testid="select">
          <legend>Select</legend>
          <label>
            Object
            <select name="object" value={object} onChange={(e) => setObject(e.currentTarget.value)}>
              {objects.map((o) => (
                <option key={o.name} value={o.name}>
                  {o.name}
                </option>
              ))}
            </select>
          </label>
          <label class="grow">
            Fields (comma-separated; a related object's as relation.field)
            <input name="fields" value={fields} onInput={(e) => setFields(e.currentTarget.value)} />
          </label>
          <label class="grow">
            Filter (JSON, as in POST /v3/exports)
            <textarea
              name="filter"
              rows={3}
              value={filter}
              placeholder='{"field": "email", "operator": "contains", "value": "@shop.io"}'
              onInput={(e) => setFilter(e.currentTarget.value)}
            />
          </label>
          <label>
            Sort by
            <input name="sort" value={sort} onInput={(e) => setSort(e.currentTarget.value)} />
          </label>
          <label>
            Order
            <select name="order" value={order} onChange={(e) => setOrder(e.currentTarget.value)}>
              <option value="asc">ascending</option>
              <option value="desc">descending</option>
            </select>
          </label>
        </fieldset>
      )}
      <label>
        Format
        <select name="format" value={format} onChange={(e) => setFormat(e.currentTarget.value)}>
          <option value="CSV">CSV</option>
          <option value="Parquet">Parquet</option>
        </select>
      </label>
      <button type="submit">Start export</button>
      {answer && <FormAnswerView answer={answer} role="status" testId="export-answer" />}
    </form>
  );
}
