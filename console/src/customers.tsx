import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';
import type {
  CustomerPageView as CustomerView,
  IdentifierKindsView as Kinds,
  TimelineEvent,
  TimelinePage,
  Unavailable,
} from '../../libs/console-api/src/console-views.js';

const ALIAS = 'alias';
const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
const when = (t: string) => t.slice(0, 19);
const isUnavailable = (v: unknown): v is Unavailable =>
  typeof v === 'object' && v !== null && 'unavailable' in v;

/** Find a customer by any identifier of the account, then everything the platform knows of them. */
export function CustomersPage() {
  const [kinds, setKinds] = useState<Kinds>();
  const [kind, setKind] = useState('email');
  const [alias, setAlias] = useState('');
  const [value, setValue] = useState('');
  const [found, setFound] = useState<CustomerView>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    call<Kinds>('GET', 'customers/identifier-kinds').then(setKinds, (e: Error) => setError(e.message));
  }, []);
  const find = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    const name = kind === ALIAS ? `${kinds?.alias_prefix ?? 'svc_alias_'}${alias}` : kind;
    try {
      setFound(
        await call<CustomerView>('GET', `customers?${new URLSearchParams({ [name]: value }).toString()}`),
      );
    } catch (err) {
      setFound(undefined);
      setError((err as Error).message);
    }
  };
  return (
    <section class="customers" aria-label="Customers">
      <form class="find" onSubmit={(e) => void find(e)} data-testid="find-customer">
        <label>
          Identifier
          <select name="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
            {(kinds?.named ?? ['customer_id', 'email', 'vuid']).map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
            <option value={ALIAS}>alias…</option>
            {kinds?.custom.map((k) => (
              <option key={k} value={k}>
                {k} (custom)
              </option>
            ))}
          </select>
        </label>
        {kind === ALIAS && (
          <label>
            Alias name
            <input name="alias" required value={alias} onInput={(e) => setAlias(e.currentTarget.value)} />
          </label>
        )}
        <label class="grow">
          Value
          <input name="value" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </label>
        <button type="submit">Find</button>
      </form>
      {error && (
        <p class="error" role="alert" data-testid="customer-error">
          {error}
        </p>
      )}
      {found && <Customer key={found.customer} view={found} />}
    </section>
  );
}

function Customer({ view }: { view: CustomerView }) {
  const history = isUnavailable(view.history) ? undefined : view.history;
  const firstSeen = new Map(history?.links.map((l) => [`${l.kind}:${l.value}`, l]) ?? []);
  return (
    <article class="customer" data-testid="customer" data-customer={view.customer}>
      <h2>
        Customer <code>{view.customer}</code>
      </h2>
      <p class="muted">
        Found by {view.found_by.kind} <code>{view.found_by.value}</code>
        {view.merged.length ? ` · ${view.merged.length} customer(s) merged into it` : ''}
      </p>
      {view.redacted && (
        <p class="redacted" role="status" data-testid="redacted">
          Redacted: a compliance opt-out removed this customer's personal data. Only the opt-in status is
          kept.
        </p>
      )}
      {isUnavailable(view.history) && <p class="error">History unavailable: {view.history.unavailable}</p>}
      <div class="panels">
        <section aria-label="Attributes">
          <h3>Attributes</h3>
          <table class="table" data-testid="attributes">
            <tbody>
              {Object.entries(view.attributes).map(([k, v]) => (
                <tr key={k} data-attribute={k}>
                  <th scope="row">
                    <code>{k}</code>
                    {view.custom_fields.includes(k) ? <span class="tag">custom</span> : null}
                  </th>
                  <td>{text(v)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
        <section aria-label="Identifiers">
          <h3>Identifiers</h3>
          <table class="table" data-testid="identifiers">
            <thead>
              <tr>
                <th>Kind</th>
                <th>Value</th>
                <th>First seen</th>
              </tr>
            </thead>
            <tbody>
              {view.identifiers.map((i) => {
                const link = firstSeen.get(`${i.kind}:${i.value}`);
                return (
                  <tr key={`${i.kind}:${i.value}`} data-testid="identifier" data-kind={i.kind}>
                    <td>{i.kind}</td>
                    <td>
                      <code>{i.value}</code>
                    </td>
                    <td>
                      {link ? when(link.first_seen) : ''}
                      {link && link.first_customer !== view.customer ? (
                        <span class="muted"> on {link.first_customer}</span>
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <h3>Merges</h3>
          {history?.merges.length ? (
            <ul data-testid="merges">
              {history.merges.map((m) => (
                <li key={m.seq} data-testid="merge">
                  {when(m.at)}: <code>{m.loser}</code> merged into <code>{m.survivor}</code> by a record with{' '}
                  {m.cause.map((c) => (
                    <code key={c}>{c} </code>
                  ))}
                  <span class="muted">(message {m.msg_id})</span>
                </li>
              ))}
            </ul>
          ) : (
            <p class="muted">No merge.</p>
          )}
        </section>
        <section aria-label="Consent">
          <h3>Consent and lists</h3>
          <table class="table" data-testid="lists">
            <tbody>
              {view.lists.map((l) => (
                <tr key={l.list_id} data-list={l.list_id}>
                  <td>{l.name}</td>
                  <td>{l.subscribed ? 'subscribed' : 'not subscribed'}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {history?.consent.length ? (
            <details data-testid="consent-history">
              <summary>History ({history.consent.length} changes)</summary>
              <ul>
                {history.consent.map((c, n) => (
                  <li key={n}>
                    {when(c.changed_at)} · {c.list_id}: {c.subscribed ? 'subscribed' : 'unsubscribed'} by{' '}
                    {c.identifier_kind} <code>{c.identifier_value}</code>{' '}
                    <span class="muted">
                      ({c.source}, {c.api_key})
                    </span>
                  </li>
                ))}
              </ul>
            </details>
          ) : null}
        </section>
        <section aria-label="Segments">
          <h3>Segments</h3>
          {isUnavailable(view.segments) ? (
            <p class="error">{view.segments.unavailable}</p>
          ) : view.segments.some((s) => s.state === 'qualified') ? (
            <ul data-testid="customer-segments">
              {view.segments
                .filter((s) => s.state === 'qualified')
                .map((s) => (
                  <li key={s.id} data-segment={s.id}>
                    {s.name} <code class="muted">{s.id}</code>
                  </li>
                ))}
            </ul>
          ) : (
            <p class="muted" data-testid="no-segments">
              {view.segments.length ? 'In none of the account’s segments.' : 'The account has no segment.'}
            </p>
          )}
        </section>
        <section aria-label="Recommendations">
          <h3>Recommendations</h3>
          {isUnavailable(view.recommendations) ? (
            <p class="error">{view.recommendations.unavailable}</p>
          ) : view.recommendations.length ? (
            <ol data-testid="recommendations">
              {view.recommendations.map((p) => (
                <li key={text(p.product_id)}>
                  <code>{text(p.product_id)}</code> {p.name ? text(p.name) : ''}{' '}
                  <span class="tag">{text(p.recommendation_type)}</span>
                </li>
              ))}
            </ol>
          ) : (
            <p class="muted">Nothing to recommend yet.</p>
          )}
        </section>
      </div>
      <Timeline customer={view.customer} />
    </article>
  );
}

/** The customer's events, newest first, a page at a time; each one opens to show all it carried. */
function Timeline({ customer }: { customer: string }) {
  const [events, setEvents] = useState<TimelineEvent[]>([]);
  const [next, setNext] = useState<string | undefined>();
  const [done, setDone] = useState(false);
  const [error, setError] = useState<string>();
  const load = async (before?: string) => {
    try {
      const page = await call<TimelinePage>(
        'GET',
        `customers/${encodeURIComponent(customer)}/events${before ? `?before=${encodeURIComponent(before)}` : ''}`,
      );
      setEvents((old) => (before ? [...old, ...page.events] : page.events));
      setNext(page.next);
      setDone(true);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  useEffect(() => {
    void load();
  }, [customer]);
  return (
    <section aria-label="Events" class="timeline">
      <h3>Events</h3>
      {error && <p class="error">{error}</p>}
      {done && events.length === 0 && <p class="muted">No event stored.</p>}
      <ol data-testid="timeline">
        {events.map((e) => (
          <li key={e.event_id} data-testid="event">
            <details>
              <summary>
                <time>{when(e.ts)}</time> <strong>{e.type}</strong> · {e.action}
                {e.order ? (
                  <span class="muted">
                    {' '}
                    · order {text(e.order.order_id)} total {text(e.order.total)}
                    {e.tally !== undefined ? ` · spent so far ${e.tally}` : ''}
                  </span>
                ) : null}
              </summary>
              {e.order?.items?.length ? (
                <table class="table" data-testid="items">
                  <thead>
                    <tr>
                      <th>Product</th>
                      <th class="num">Price</th>
                      <th class="num">Quantity</th>
                    </tr>
                  </thead>
                  <tbody>
                    {e.order.items.map((item, n) => (
                      <tr key={n}>
                        <td>
                          <code>{text(item.product_id ?? item.sku ?? '')}</code>
                        </td>
                        <td class="num">{text(item.price ?? '')}</td>
                        <td class="num">{text(item.quantity ?? '')}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ) : null}
              <pre data-testid="event-json">{JSON.stringify(e, null, 2)}</pre>
            </details>
          </li>
        ))}
      </ol>
      {next && (
        <button data-testid="older" onClick={() => void load(next)}>
          Older events
        </button>
      )}
    </section>
  );
}
