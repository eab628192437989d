import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { call, setCsrf, type SessionView } from './api.js';
import { InspectorPage } from './inspector.js';
import { CustomersPage } from './customers.js';
import { ExportsPage } from './exports.js';
import { OverviewPage } from './overview.js';
import { ActivityPage, ApisPage, KeysPage, ListsPage, ObjectsPage } from './pages.js';
import { RecommendationsPage } from './recommendations.js';
import { SegmentsPage } from './segments.js';

const PAGES = [
  { path: 'inspector', title: 'Event inspector' },
  { path: 'overview', title: 'Overview' },
  { path: 'customers', title: 'Customers' },
  { path: 'segments', title: 'Segments' },
  { path: 'keys', title: 'Keys' },
  { path: 'apis', title: 'APIs' },
  { path: 'objects', title: 'Objects & fields' },
  { path: 'lists', title: 'Lists' },
  { path: 'exports', title: 'Exports' },
  { path: 'recommendations', title: 'Recommendations' },
  { path: 'activity', title: 'Activity log' },
] as const;
type PagePath = (typeof PAGES)[number]['path'];

function currentPage(): PagePath {
  const name = location.pathname.replace(/^\/console\/?/, '').split('/')[0] ?? '';
  return PAGES.find((p) => p.path === name)?.path ?? 'inspector';
}

function SignIn({ onSignedIn }: { onSignedIn: (s: SessionView) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const session = await call<SessionView>('POST', 'session', { private_key: key });
      setKey(''); // the key is not kept: the session cookie (HttpOnly) is all the page holds
      onSignedIn(session);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main class="signin">
      <form onSubmit={(e) => void submit(e)} data-testid="signin">
        <h1>CDP console</h1>
        <label>
          Private key
          <input
            type="password"
            name="private_key"
            autoComplete="off"
            autoFocus
            required
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Sign in</button>
        {error && (
          <p class="error" role="alert" data-testid="signin-error">
            {error}
          </p>
        )}
        <p class="hint">The key opens a short session; it is not stored in this page.</p>
      </form>
    </main>
  );
}

function App() {
  const [session, setSession] = useState<SessionView | null | undefined>(undefined);
  const [page, setPage] = useState<PagePath>(currentPage());

  useEffect(() => {
    call<SessionView>('GET', 'session').then(
      (s) => {
        setCsrf(s.csrf);
        setSession(s);
      },
      () => setSession(null),
    );
    const onPop = () => setPage(currentPage());
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);

  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null)
    return (
      <SignIn
        onSignedIn={(s) => {
          setCsrf(s.csrf);
          setSession(s);
        }}
      />
    );

  const go = (path: PagePath) => (e: Event) => {
    e.preventDefault();
    history.pushState(null, '', `/console/${path}`);
    setPage(path);
  };
  const signOut = async () => {
    await call('DELETE', 'session').catch(() => undefined);
    setCsrf('');
    setSession(null);
  };
  const title = PAGES.find((p) => p.path === page)!.title;
  return (
    <div class="shell">
      <header>
        <strong class="brand">CDP</strong>
        <nav aria-label="Console">
          {PAGES.map((p) => (
            <a
              key={p.path}
              href={`/console/${p.path}`}
              aria-current={p.path === page ? 'page' : undefined}
              onClick={go(p.path)}
            >
              {p.title}
            </a>
          ))}
        </nav>
        <span class="account" title={session.account.tracker_id}>
          {session.account.name}
        </span>
        <button data-testid="signout" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main>
        <h1>{title}</h1>
        {/* Kept open on the other pages: the inspector goes on collecting while keys or fields are looked at. */}
        <div hidden={page !== 'inspector'}>
          <InspectorPage publicKey={session.account.tracker_id} />
        </div>
        {page === 'overview' && <OverviewPage />}
        {page === 'customers' && <CustomersPage />}
        {page === 'segments' && <SegmentsPage />}
        {page === 'keys' && <KeysPage />}
        {page === 'apis' && <ApisPage />}
        {page === 'objects' && <ObjectsPage />}
        {page === 'lists' && <ListsPage />}
        {page === 'exports' && <ExportsPage />}
        {page === 'activity' && <ActivityPage />}
        {page === 'recommendations' && <RecommendationsPage />}
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
