/**
 * Clients that behave as a real integration does while an engine fails: each sends batches of events
 * (new customers, by email, and more events for its earlier ones) and profile updates, one request at
 * a time; what gets a 202 is recorded as acknowledged, what gets a 503 or 429 (or no answer) is sent
 * again, unchanged, after `Retry-After`. Every answer that is neither is recorded as an anomaly.
 */
import { eventually } from './eventually.js';

/** What the clients were promised (a 202), to be checked against the platform afterwards. */
export interface Acknowledged {
  /** page (unique per event) → the email of its customer */
  events: Map<string, string>;
  /** email → the first_name its acknowledged profile update set (undefined: created by events only) */
  customers: Map<string, string | undefined>;
}

export interface Answer {
  at: number;
  client: number;
  path: string;
  status: number;
  retryAfter: string | null;
  ms: number;
  body?: unknown;
}

export interface LoadTarget {
  /** Base URLs of the API replicas; client i talks to replica i mod n. */
  apis: string[];
  publicKey: string;
}

/** A request is given up (and counted as hung) past this: far above any bound the API sets itself. */
const REQUEST_DEADLINE_MS = 20_000;
const EVENTS_PER_BATCH = 20;
const PROFILES_PER_BATCH = 10;
/** A pause between two requests of a client: a steady load of a few hundred records a second. */
const PACE_MS = 50;

export class ClientLoad {
  readonly acknowledged: Acknowledged = { events: new Map(), customers: new Map() };
  /** Every answer that was not a 202. */
  readonly refusals: Answer[] = [];
  /** Answers a client must never get: a 5xx other than 503, a 503/429 without Retry-After, a hang. */
  readonly anomalies: Answer[] = [];
  accepted = 0;
  private stopping = false;
  private running: Promise<void>[] = [];

  constructor(
    private readonly target: LoadTarget,
    private readonly tag: string,
  ) {}

  start(clients: number): void {
    this.running = Array.from({ length: clients }, (_, i) => this.client(i));
  }

  /** Lets each client finish (and resend until acknowledged) the request it is on, then stops. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running);
  }

  /** Resolves once this many more requests were acknowledged. */
  async acceptedMore(n: number, timeoutMs = 60_000): Promise<void> {
    const goal = this.accepted + n;
    await eventually(() => this.accepted >= goal, timeoutMs, 20, {
      timeoutMessage: () => `only ${this.accepted} of ${goal} requests acknowledged`,
    });
  }

  /** The most recently acknowledged customer of every client: once these read back, the backlog is in. */
  latestCustomers(): string[] {
    return [...this.latest.values()];
  }

  private readonly latest = new Map<number, string>();

  private async client(i: number): Promise<void> {
    const api = this.target.apis[i % this.target.apis.length]!;
    const mine: string[] = []; // this client's acknowledged customers still to get a profile update
    for (let n = 0; !this.stopping; n++) {
      await new Promise((r) => setTimeout(r, PACE_MS));
      if (n % 2 === 0) {
        // Events: half of them create a customer (a new email), half add to this client's earlier ones.
        const emails = Array.from({ length: EVENTS_PER_BATCH }, (_, k) =>
          k % 2 === 0 || mine.length === 0
            ? `${this.tag}-c${i}-${n}-${k}@load.test`
            : mine[(n * 7 + k) % mine.length]!,
        );
        const pages = emails.map((_, k) => `/${this.tag}/c${i}/${n}/${k}`);
        const body = emails.map((email, k) => ({
          type: 'pageview',
          identifiers: { email },
          data: { page: pages[k] },
        }));
        if (!(await this.send(i, api, '/v3/events', body))) continue;
        emails.forEach((email, k) => {
          this.acknowledged.events.set(pages[k]!, email);
          if (!this.acknowledged.customers.has(email)) {
            this.acknowledged.customers.set(email, undefined);
            mine.push(email);
          }
          this.latest.set(i, email);
        });
      } else {
        // Profiles: new customers with their names, and a name for customers the events created.
        const fresh = Array.from(
          { length: PROFILES_PER_BATCH / 2 },
          (_, k) => `${this.tag}-p${i}-${n}-${k}@load.test`,
        );
        const named = mine.splice(0, PROFILES_PER_BATCH / 2);
        const records = [...fresh, ...named].map((email) => ({
          email,
          first_name: `F${n}-${email.split('@')[0]}`,
        }));
        const profiles = records.map((attributes) => ({ attributes }));
        if (!(await this.send(i, api, '/v3/profiles', profiles))) continue;
        for (const r of records) this.acknowledged.customers.set(r.email, r.first_name);
        this.latest.set(i, records[0]!.email);
      }
    }
  }

  /** Sends until the platform acknowledges (202); waits Retry-After between tries, as a client would. */
  /** True once acknowledged; false when given up (an answer that is no refusal for now: an anomaly). */
  private async send(client: number, api: string, path: string, body: unknown): Promise<boolean> {
    for (;;) {
      const answer = await ask(`${api}${path}`, client, {
        method: 'POST',
        headers: { 'x-api-key': this.target.publicKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (answer.status === 202) {
        this.accepted++;
        return true;
      }
      this.refusals.push(answer);
      if (!isProperRefusal(answer)) this.anomalies.push(answer);
      // A client sends again what was refused for now (or got no answer); anything else it gives up.
      if (![503, 429, 0, -1].includes(answer.status)) return false;
      const wait = Number(answer.retryAfter ?? 1);
      await new Promise((r) => setTimeout(r, (Number.isFinite(wait) ? wait : 1) * 1000));
    }
  }
}

/** One request, with what came back and how long it took; no answer within the deadline is status -1. */
export async function ask(url: string, client: number, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const path = new URL(url).pathname;
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) });
    const text = await res.text();
    return {
      at: started,
      client,
      path,
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      ms: Date.now() - started,
      body: text ? (JSON.parse(text) as unknown) : undefined,
    };
  } catch (err) {
    const hung = err instanceof Error && err.name === 'TimeoutError';
    return { at: started, client, path, status: hung ? -1 : 0, retryAfter: null, ms: Date.now() - started };
  }
}

/**
 * A refusal a client can act on: a 503 or 429 in the spec's envelope with a whole-seconds
 * Retry-After. A closed connection (status 0) or no answer in time (-1) is not one.
 */
export function isProperRefusal(a: Answer): boolean {
  if (a.status !== 503 && a.status !== 429) return false;
  const body = a.body as { status?: unknown; title?: unknown; timestamp?: unknown } | undefined;
  return (
    /^\d+$/.test(a.retryAfter ?? '') &&
    body?.status === a.status &&
    typeof body.title === 'string' &&
    typeof body.timestamp !== 'undefined'
  );
}
