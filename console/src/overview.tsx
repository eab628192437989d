import { useEffect, useMemo, useState } from 'preact/hooks';
import { call } from './api.js';
import { Chart, type Series } from './chart.js';

interface MinuteCount {
  minute: string;
  type: string;
  count: number;
}

interface OverviewView {
  range: 'hour' | 'day';
  events: MinuteCount[];
  rejected: MinuteCount[];
  reasons: { outcome: 'rejected' | 'dropped'; type: string; reason: string; records: number }[];
  lag: { minute: string; messages: number; p50_ms: number; max_ms: number }[];
  totals: { customers: number; events: number; orders: number; revenue: number };
  revenue_by_day: { day: string; orders: number; revenue: number }[];
  backlog: { driver: string; ready: boolean; detail?: string };
}

/** Asked again this often while the page is open and visible; never while it is closed or hidden. */
const REFRESH_MS = 10_000;
const RANGE_MINUTES = { hour: 60, day: 1440 } as const;
/** Types drawn one by one; the rest are summed as "other". */
const MAX_TYPES = 7;

/** The store writes `2026-11-26 06:12:00.000` (UTC): seconds since the epoch. */
function seconds(storeTime: string): number {
  return Math.floor(Date.parse(`${storeTime.replace(' ', 'T')}${storeTime.includes('Z') ? '' : 'Z'}`) / 1000);
}

/** Every minute of the range (those without a count drawn as 0), one series per type. */
function perMinute(
  range: OverviewView['range'],
  counts: MinuteCount[],
  now: number,
): { x: number[]; series: Series[] } {
  const minutes = RANGE_MINUTES[range];
  const last = Math.floor(now / 60_000) * 60;
  const x = Array.from({ length: minutes }, (_, n) => last - (minutes - 1 - n) * 60);
  const index = new Map(x.map((t, n) => [t, n]));
  const byType = new Map<string, number>();
  for (const e of counts) byType.set(e.type, (byType.get(e.type) ?? 0) + e.count);
  const ranked = [...byType.entries()].sort((a, b) => b[1] - a[1]).map(([t]) => t);
  const shown = ranked.slice(0, MAX_TYPES);
  const names = ranked.length > MAX_TYPES ? [...shown, 'other'] : shown;
  const values = names.map(() => new Array<number>(minutes).fill(0));
  for (const e of counts) {
    const at = index.get(seconds(e.minute));
    if (at === undefined) continue;
    const s = shown.indexOf(e.type);
    values[s < 0 ? names.length - 1 : s]![at]! += e.count;
  }
  return { x, series: names.map((label, n) => ({ label, values: values[n]! })) };
}

const money = (n: number) => n.toLocaleString(undefined, { maximumFractionDigits: 2 });

/** Events, lag, totals and revenue drawn from the store's aggregates for the account. */
export function OverviewPage() {
  const [range, setRange] = useState<'hour' | 'day'>('hour');
  const [view, setView] = useState<OverviewView>();
  const [error, setError] = useState<string>();
  const [at, setAt] = useState(Date.now());
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let live = true;
    const load = async () => {
      if (!document.hidden) {
        try {
          const v = await call<OverviewView>('GET', `overview?range=${range}`);
          if (!live) return;
          setView(v);
          setAt(Date.now());
          setError(undefined);
        } catch (e) {
          if (live) setError((e as Error).message);
        }
      }
      if (live) timer = setTimeout(() => void load(), REFRESH_MS);
    };
    void load();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [range]);
  const events = useMemo(() => (view ? perMinute(view.range, view.events, at) : undefined), [view]);
  const rejected = useMemo(() => (view ? perMinute(view.range, view.rejected, at) : undefined), [view]);
  const lag = useMemo(() => {
    if (!view) return undefined;
    return {
      x: view.lag.map((l) => seconds(l.minute)),
      series: [
        { label: 'median ms', values: view.lag.map((l) => l.p50_ms) },
        { label: 'max ms', values: view.lag.map((l) => l.max_ms) },
      ],
    };
  }, [view]);
  const revenue = useMemo(() => {
    if (!view) return undefined;
    return {
      x: view.revenue_by_day.map((d) => seconds(`${d.day} 00:00:00`)),
      series: [{ label: 'revenue', values: view.revenue_by_day.map((d) => d.revenue) }],
    };
  }, [view]);
  return (
    <section class="overview" aria-label="Overview">
      <div class="toolbar" role="group" aria-label="Range">
        {(['hour', 'day'] as const).map((r) => (
          <button
            key={r}
            aria-pressed={range === r}
            class={range === r ? 'current' : ''}
            onClick={() => setRange(r)}
          >
            Last {r}
          </button>
        ))}
        <span class="muted" data-testid="refreshed">
          {view ? `updated ${new Date(at).toLocaleTimeString()} · every ${REFRESH_MS / 1000} s` : 'loading…'}
        </span>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {view && (
        <>
          <dl class="totals" data-testid="totals">
            <div>
              <dt>Customers</dt>
              <dd data-total="customers">{view.totals.customers}</dd>
            </div>
            <div>
              <dt>Events</dt>
              <dd data-total="events">{view.totals.events}</dd>
            </div>
            <div>
              <dt>Orders</dt>
              <dd data-total="orders">{view.totals.orders}</dd>
            </div>
            <div>
              <dt>Revenue</dt>
              <dd data-total="revenue">{money(view.totals.revenue)}</dd>
            </div>
          </dl>
          <h2>Events accepted per minute, by type</h2>
          {events && (
            <Chart name="events" label="Events accepted per minute by type" unit="events" {...events} />
          )}
          <h2>Records rejected per minute, by type</h2>
          {rejected && rejected.series.length ? (
            <Chart name="rejected" label="Records rejected per minute by type" unit="records" {...rejected} />
          ) : (
            <p class="empty" data-testid="no-rejections">
              No record rejected in this range.
            </p>
          )}
          <h2>Top rejection reasons</h2>
          {view.reasons.length ? (
            <table class="table reasons" data-testid="reasons">
              <thead>
                <tr>
                  <th class="num">Records</th>
                  <th>Reason</th>
                  <th>Type</th>
                  <th>Outcome</th>
                </tr>
              </thead>
              <tbody>
                {view.reasons.map((r) => (
                  <tr key={`${r.outcome} ${r.type} ${r.reason}`} data-testid="reason">
                    <td class="num" data-records>
                      {r.records}
                    </td>
                    <td data-reason>{r.reason}</td>
                    <td>
                      <code>{r.type}</code>
                    </td>
                    <td>{r.outcome}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p class="empty">Nothing rejected or dropped in this range.</p>
          )}
          <h2>Ingest lag (202 → stored)</h2>
          <p class="muted" data-testid="backlog">
            Bus backlog ({view.backlog.driver}):{' '}
            {view.backlog.detail ?? (view.backlog.ready ? 'ready' : 'not ready')}
          </p>
          {lag && lag.x.length ? (
            <Chart
              name="lag"
              label="Ingest lag per minute"
              unit="ms"
              range={events ? [events.x[0]!, events.x[events.x.length - 1]!] : undefined}
              {...lag}
            />
          ) : (
            <p class="empty">No message stored in this range.</p>
          )}
          <h2>Revenue by day (30 days)</h2>
          {revenue && revenue.x.length ? (
            <Chart name="revenue" label="Revenue by day" bars {...revenue} />
          ) : (
            <p class="empty">No purchase in the last 30 days.</p>
          )}
        </>
      )}
    </section>
  );
}
