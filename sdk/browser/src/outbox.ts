import { isRetriable, retryDelay } from './backoff.js';
import { load, randomId, save, storageKeys } from './storage.js';

/** One record waiting for its request: the API path and the record, as the API takes it in an array. */
interface Item {
  p: string;
  r: unknown;
}

/**
 * A request sealed for good: its body bytes and Idempotency-Key never change, so a resend whose first
 * answer was lost (a network error, a page closed) is answered again by the API and stored once.
 */
export interface Batch {
  k: string;
  p: string;
  body: string;
  attempt: number;
}

/** What localStorage keeps per tab. `c`: the tab closed, another tab may take its batches over. */
interface Saved {
  items: Item[];
  batches: Batch[];
  c?: boolean;
  t: number;
}

/** How a batch is sent: `fetch` with headers, or for beacons the key and the idempotency id in the query. */
export interface Delivery {
  apiHost: string;
  trackerId: string;
}

export interface OutboxOptions extends Delivery {
  win: Window;
  /** Records per request; a full batch goes at once, a partial one after `flushMs`. */
  maxItems?: number;
  flushMs?: number;
  random?: () => number;
  /** Timers, replaceable by tests. */
  schedule?: (run: () => void, ms: number) => unknown;
  /** A batch the API refused for good (a 4xx other than 409 and 429): dropped, reported here. */
  onRefused?: (status: number, path: string, body: string) => void;
}

/** Body bytes a page may send while it unloads (the keepalive budget is 64 KiB for all requests). */
export const UNLOAD_BUDGET = 60_000;
/** Largest body of one batch, so that any batch fits the unload budget. */
export const MAX_BATCH_BYTES = 30_000;
const TAB_KEY = 'svc_tab';
const ABANDONED_MS = 86_400_000;

/**
 * The SDK's delivery: records are queued per API path, sealed into batches (a few records, or what
 * a second gathered), sent one batch at a time, retried with capped exponential backoff and jitter,
 * kept in localStorage (per tab) until the API accepted them, and sent with `keepalive` (or a beacon)
 * when the page is hidden or closed.
 */
export class Outbox {
  private readonly win: Window;
  private readonly key: string;
  private state: Saved;
  private sending = false;
  private waiting = false;
  private timer = false;
  private readonly maxItems: number;
  private readonly flushMs: number;
  private readonly random: () => number;
  private readonly schedule: (run: () => void, ms: number) => unknown;

  constructor(private readonly options: OutboxOptions) {
    this.win = options.win;
    this.maxItems = options.maxItems ?? 10;
    this.flushMs = options.flushMs ?? 1000;
    this.random = options.random ?? Math.random;
    this.schedule = options.schedule ?? ((run, ms) => this.win.setTimeout(run, ms));
    const prefix = `svc_outbox_${options.trackerId}_`;
    this.key = prefix + tabId(this.win);
    this.state = load<Saved>(this.win, this.key) ?? { items: [], batches: [], t: Date.now() };
    this.state.c = false;
    this.adoptClosedTabs(prefix);
    this.persist();
  }

  /** Records and batches not yet accepted by the API. */
  pending(): { items: number; batches: Batch[] } {
    return { items: this.state.items.length, batches: this.state.batches };
  }

  add(path: string, record: unknown): void {
    this.state.items.push({ p: path, r: record });
    this.persist();
    if (this.state.items.length >= this.maxItems) this.flush();
    else if (!this.timer) {
      this.timer = true;
      this.schedule(() => {
        this.timer = false;
        this.flush();
      }, this.flushMs);
    }
  }

  /** Seals what is queued and sends. */
  flush(): void {
    this.seal();
    void this.pump();
  }

  /** Retry now (the browser is online again): the backoff wait is over. */
  resume(): void {
    this.waiting = false;
    this.flush();
  }

  /**
   * The page is being hidden or closed: everything is sealed and sent with `keepalive` within the
   * budget. The batches stay stored until answered; a page that never hears back (it closed) leaves them
   * for its next load or another tab, which send them again under the same Idempotency-Key.
   */
  unload(closing: boolean): void {
    this.seal();
    this.state.c = closing;
    this.persist();
    let budget = UNLOAD_BUDGET;
    for (const batch of this.state.batches) {
      if (batch.body.length > budget) break;
      budget -= batch.body.length;
      void this.send(batch, true);
    }
  }

  /** The tab is shown again (back from the back/forward cache): it owns its batches again. */
  reopen(): void {
    this.state.c = false;
    this.persist();
    this.flush();
  }

  private seal(): void {
    const items = this.state.items;
    while (items.length) {
      const path = items[0]!.p;
      const records: unknown[] = [];
      let bytes = 2;
      while (items.length && items[0]!.p === path && records.length < this.maxItems) {
        const size = JSON.stringify(items[0]!.r).length + 1;
        if (records.length && bytes + size > MAX_BATCH_BYTES) break;
        records.push(items.shift()!.r);
        bytes += size;
      }
      this.state.batches.push({ k: randomId(this.win), p: path, body: JSON.stringify(records), attempt: 0 });
    }
    this.persist();
  }

  private async pump(): Promise<void> {
    if (this.sending || this.waiting) return;
    const batch = this.state.batches[0];
    if (!batch) return;
    this.sending = true;
    const status = await this.send(batch, false);
    this.sending = false;
    if (isRetriable(status.code) && this.state.batches.includes(batch)) {
      batch.attempt += 1;
      this.persist();
      this.waiting = true;
      this.schedule(
        () => {
          if (this.waiting) this.resume();
        },
        retryDelay(batch.attempt, this.random(), status.retryAfter),
      );
      return;
    }
    void this.pump();
  }

  /** Sends one batch; settles it on an answer that is final (accepted, or refused for good). */
  private async send(
    batch: Batch,
    keepalive: boolean,
  ): Promise<{ code: number; retryAfter?: string | null }> {
    const { apiHost, trackerId } = this.options;
    const v2 = batch.p.startsWith('/v2/');
    let code = 0;
    let retryAfter: string | null = null;
    try {
      const res = await this.win.fetch(apiHost + batch.p, {
        method: 'POST',
        keepalive,
        headers: {
          'content-type': 'application/json',
          [v2 ? 'svc-tracker-id' : 'x-api-key']: trackerId,
          'idempotency-key': batch.k,
        },
        body: batch.body,
      });
      code = res.status;
      retryAfter = res.headers.get('retry-after');
    } catch {
      // A keepalive request over the browser's budget is refused at once: a beacon may still go.
      if (keepalive && this.beacon(batch)) return { code: 0 };
    }
    if (!isRetriable(code)) this.settle(batch, code);
    return { code, retryAfter };
  }

  private beacon(batch: Batch): boolean {
    const { apiHost, trackerId } = this.options;
    const url = `${apiHost}${batch.p}?api_key=${encodeURIComponent(trackerId)}&idempotency_key=${batch.k}`;
    try {
      // text/plain: a beacon of another type is refused by browsers (it would need a preflight).
      return this.win.navigator.sendBeacon(url, new Blob([batch.body], { type: 'text/plain' }));
    } catch {
      return false;
    }
  }

  private settle(batch: Batch, status: number): void {
    const at = this.state.batches.indexOf(batch);
    if (at === -1) return;
    this.state.batches.splice(at, 1);
    this.persist();
    if (status >= 300) this.options.onRefused?.(status, batch.p, batch.body);
  }

  private adoptClosedTabs(prefix: string): void {
    for (const key of storageKeys(this.win)) {
      if (!key.startsWith(prefix) || key === this.key) continue;
      const other = load<Saved>(this.win, key);
      if (!other || !(other.c || Date.now() - other.t > ABANDONED_MS)) continue;
      this.state.batches.push(...other.batches);
      this.state.items.push(...other.items);
      save(this.win, key, undefined);
    }
  }

  private persist(): void {
    this.state.t = Date.now();
    save(this.win, this.key, this.state);
  }
}

/** A tab's id lives in sessionStorage: it survives reloads of the tab, and no other tab shares it. */
function tabId(win: Window): string {
  try {
    let id = win.sessionStorage.getItem(TAB_KEY);
    if (!id) {
      id = randomId(win).slice(0, 12);
      win.sessionStorage.setItem(TAB_KEY, id);
    }
    return id;
  } catch {
    return 'page';
  }
}
