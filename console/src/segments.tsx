import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';
import { FormAnswerView, refusal, type FormAnswer } from './form-answer.js';

interface SegmentView {
  id: string;
  name: string;
  description: string;
  definition: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  /** The segment's customers now (GET /v3/segments/{id}/size), or why it could not be counted. */
  size: { customers: number; as_of: string } | { unavailable: string };
}

/** What the form edits: a new segment (id editable) or an existing one. */
interface Draft {
  id: string;
  name: string;
  description: string;
  definition: string;
  existing: boolean;
}

const EXAMPLE = JSON.stringify(
  {
    events: [
      { type: 'product', action: 'add_to_cart', within_days: 7, min_count: 1 },
      { type: 'order', action: 'purchase', within_days: 7, max_count: 0 },
    ],
  },
  null,
  2,
);
const EMPTY: Draft = { id: '', name: '', description: '', definition: EXAMPLE, existing: false };

/** The account's segments: listed with their size, created, edited and deleted as /v3/segments does. */
export function SegmentsPage() {
  const [list, setList] = useState<SegmentView[]>();
  const [error, setError] = useState<string>();
  const [draft, setDraft] = useState<Draft>();
  const [deleting, setDeleting] = useState<string>();
  const load = () =>
    call<{ segments: SegmentView[] }>('GET', 'segments').then(
      (v) => {
        setList(v.segments);
        setError(undefined);
      },
      (e: Error) => setError(e.message),
    );
  useEffect(() => {
    void load();
  }, []);
  const remove = async (id: string) => {
    try {
      await call('DELETE', `segments/${encodeURIComponent(id)}`);
      setDeleting(undefined);
      await load();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const edit = (s: SegmentView) =>
    setDraft({
      id: s.id,
      name: s.name,
      description: s.description,
      definition: JSON.stringify(s.definition, null, 2),
      existing: true,
    });
  return (
    <section class="segments" aria-label="Segments">
      <div class="toolbar">
        <button data-testid="new-segment" onClick={() => setDraft({ ...EMPTY })}>
          New segment
        </button>
        <span class="muted">
          A customer qualifies for a segment when the customer filter and every event condition hold
          (docs/api-notes.md “Segments”).
        </span>
      </div>
      {draft && (
        <SegmentForm
          key={draft.existing ? draft.id : 'new'}
          draft={draft}
          onDone={() => {
            setDraft(undefined);
            void load();
          }}
          onCancel={() => setDraft(undefined)}
        />
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {list && list.length === 0 && <p class="empty">No segment yet.</p>}
      {list && list.length > 0 && (
        <table class="table" data-testid="segments">
          <thead>
            <tr>
              <th>Segment</th>
              <th>Description</th>
              <th class="num">Customers</th>
              <th>Updated</th>
              <th>
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((s) => (
              <tr key={s.id} data-testid="segment" data-segment={s.id}>
                <td>
                  <strong data-testid="segment-name">{s.name}</strong>
                  <div>
                    <code>{s.id}</code>
                  </div>
                </td>
                <td>{s.description}</td>
                <td class="num" data-testid="segment-size">
                  {'unavailable' in s.size ? (
                    <span class="error" title={s.size.unavailable}>
                      unavailable
                    </span>
                  ) : (
                    <span title={`as of ${s.size.as_of}`}>{s.size.customers}</span>
                  )}
                </td>
                <td>{s.updated_at.slice(0, 16).replace('T', ' ')}</td>
                <td>
                  <div class="actions">
                    <button onClick={() => edit(s)} aria-label={`Edit ${s.name}`}>
                      Edit
                    </button>
                    {deleting === s.id ? (
                      <span class="confirm" role="group" aria-label={`Delete ${s.name}?`}>
                        Delete?{' '}
                        <button class="danger" onClick={() => void remove(s.id)}>
                          Yes, delete
                        </button>{' '}
                        <button onClick={() => setDeleting(undefined)}>No</button>
                      </span>
                    ) : (
                      <button
                        class="danger"
                        onClick={() => setDeleting(s.id)}
                        aria-label={`Delete ${s.name}`}
                      >
                        Delete
                      </button>
                    )}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Creates or replaces a segment; the server's answer (the API's status, message and invalids) is shown as sent. */
function SegmentForm(props: { draft: Draft; onDone: () => void; onCancel: () => void }) {
  const [draft, setDraft] = useState(props.draft);
  const [answer, setAnswer] = useState<FormAnswer>();
  const set = (k: keyof Draft) => (e: { currentTarget: { value: string } }) =>
    setDraft((d) => ({ ...d, [k]: e.currentTarget.value }));
  const submit = async (e: Event) => {
    e.preventDefault();
    let definition: unknown;
    try {
      definition = JSON.parse(draft.definition);
    } catch {
      setAnswer({ ok: false, text: 'definition: not JSON', invalids: [] });
      return;
    }
    const body = {
      name: draft.name,
      ...(draft.description ? { description: draft.description } : {}),
      definition,
    };
    try {
      if (draft.existing) await call('PUT', `segments/${encodeURIComponent(draft.id)}`, body);
      else await call('POST', 'segments', { id: draft.id, ...body });
      props.onDone();
    } catch (err) {
      setAnswer(refusal(err));
    }
  };
  return (
    <form class="segment-form" onSubmit={(e) => void submit(e)} data-testid="segment-form">
      <h2>{draft.existing ? `Edit ${draft.id}` : 'New segment'}</h2>
      <label>
        Id
        <input
          name="id"
          value={draft.id}
          readOnly={draft.existing}
          autoFocus={!draft.existing}
          placeholder="cart_abandoners"
          onInput={set('id')}
        />
      </label>
      <label>
        Name
        <input name="name" value={draft.name} autoFocus={draft.existing} onInput={set('name')} />
      </label>
      <label class="grow">
        Description
        <input name="description" value={draft.description} onInput={set('description')} />
      </label>
      <label class="grow">
        Definition (JSON: customer filter as in POST /v3/exports, events conditions)
        <textarea name="definition" rows={10} value={draft.definition} onInput={set('definition')} />
      </label>
      <div class="buttons">
        <button type="submit">{draft.existing ? 'Save segment' : 'Create segment'}</button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
      {answer && <FormAnswerView answer={answer} role="alert" testId="segment-answer" />}
    </form>
  );
}
