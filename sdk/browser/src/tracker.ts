import { openVisit, pageFields, type PageVisit } from './context.js';
import { Outbox } from './outbox.js';
import { isEmailLike, subscriptionProblem, type SubscribeOptions } from './validation.js';
import { readVuid, renewVuid } from './vuid.js';

export interface TrackerOptions {
  /** The account's public key (tracker id). */
  trackerId: string;
  /** Where the platform answers, e.g. `https://cdp.example.com` (default: where the script came from). */
  apiHost?: string;
  /** Domain of the `vuid` cookie, to share it across subdomains (default: this host only). */
  cookieDomain?: string;
  /** Records per request (default 10) and the longest wait before a partial batch goes (default 1000 ms). */
  batchSize?: number;
  flushMs?: number;
  /** A batch the platform refused for good (status, path, body). */
  onRefused?: (status: number, path: string, body: string) => void;
}

/** `svc.consent` arguments, as the original web SDK takes them. */
export interface ConsentOptions {
  consent: boolean;
  identifier_field_name?: string;
  identifier_value: string;
  update_reason?: string;
  /** Unix seconds (milliseconds and Dates are read too). */
  update_ts?: number | Date;
  event_data?: Record<string, unknown>;
}

type Fields = Record<string, unknown>;

const NAMED_IDENTIFIERS = ['customer_id', 'email', 'vuid'];
const isIdentifier = (name: string) =>
  NAMED_IDENTIFIERS.includes(name) || name.startsWith('svc_alias_') || name.endsWith('_push_tokens');

/** Unix seconds of a time given in seconds, milliseconds (past 1e11, i.e. year 5138 in seconds) or a Date. */
const unixSeconds = (t: number | Date) => (+t > 1e11 ? +t / 1000 : +t);

/**
 * The browser SDK's calls (the original web SDK's shapes under the global `svc`). Every call carries
 * the browser's `vuid`; events carry the page's inferred fields (spec event table), which the caller's
 * fields override.
 */
export class Tracker {
  private vuid: string;
  private readonly visit: PageVisit;
  private readonly outbox: Outbox;

  constructor(
    private readonly win: Window,
    private readonly options: TrackerOptions,
  ) {
    this.vuid = readVuid(win, options.cookieDomain);
    this.visit = openVisit(win, Date.now());
    this.outbox = new Outbox({
      win,
      trackerId: options.trackerId,
      apiHost: (options.apiHost ?? win.location.origin).replace(/\/+$/, ''),
      maxItems: options.batchSize,
      flushMs: options.flushMs,
      onRefused: options.onRefused,
    });
    win.addEventListener('pagehide', () => this.outbox.unload(true));
    win.addEventListener('pageshow', (e) => e.persisted && this.outbox.reopen());
    win.addEventListener('visibilitychange', () => {
      if (win.document.visibilityState === 'hidden') this.outbox.unload(false);
    });
    win.addEventListener('online', () => this.outbox.resume());
    this.outbox.flush();
  }

  /** `svc.event(type, {action, ...fields})`; `svc.event('pageview')` records this page. */
  event(type: string, fields: Fields = {}): void {
    const now = Date.now();
    this.visit.touch(now);
    const { action, ...rest } = fields;
    const identifiers: Fields = { vuid: this.vuid };
    const data: Fields = { ...this.inferred(), ts: now / 1000 };
    for (const [name, value] of Object.entries(rest)) (isIdentifier(name) ? identifiers : data)[name] = value;
    this.outbox.add('/v3/events', { type, ...(action ? { action } : {}), identifiers, data });
  }

  /** `svc.customer({email}, {first_name})`: the profile, linked to this browser. */
  customer(identifiers: Fields = {}, attributes: Fields = {}): void {
    this.outbox.add('/v3/profiles', { attributes: { ...attributes, ...identifiers, vuid: this.vuid } });
  }

  /** `svc.entity('product', {...})`: a record of an object (POST /v3/objects/{object}); the API says which. */
  entity(type: string, data: Fields): void {
    const customer = type === 'customer' || type === 'customers';
    this.outbox.add(
      `/v3/objects/${encodeURIComponent(type)}`,
      customer ? { ...data, vuid: this.vuid } : data,
    );
  }

  /**
   * `svc.consent({consent, identifier_field_name, identifier_value, update_reason, update_ts, event_data})`:
   * `POST /v3/consent` (for `email` the channel opt-in: the profile's `opted_in` and `svc_all`). A consent
   * record names one identifier only, so for an email the vuid is linked by a profile update queued first.
   * `update_ts` (unix seconds, milliseconds or a Date) defaults to the call's time, so a consent delivered
   * late (offline, retried) keeps when it was given. Returns false, sending nothing, for an identifier
   * that takes no consent (email, phone, `*_push_tokens`) or an email that is none.
   */
  consent(options: ConsentOptions): boolean {
    const field = options?.identifier_field_name ?? 'email';
    const value = options?.identifier_value;
    const email = field === 'email';
    if (email ? !isEmailLike(value) : !/^phone$|_push_tokens$/.test(field) || !value) return false;
    const id = email ? value.trim() : value;
    if (email) this.customer({ email: id });
    this.outbox.add('/v3/consent', {
      identifier_field_name: field,
      identifier_value: id,
      consent: Boolean(options.consent),
      consent_update_reason: options.update_reason,
      consent_update_ts: unixSeconds(options.update_ts ?? Date.now()),
      event_data: options.event_data,
    });
    return true;
  }

  /**
   * `svc.subscribe({list_id, email, ...fields, success, error})`: validated first — on a problem
   * `error` is called and nothing is sent; otherwise the profile (with the further fields) and one
   * subscription update per list are queued for delivery, and `success` is called.
   */
  subscribe(options: SubscribeOptions): void {
    this.changeSubscription(options, true);
  }

  unsubscribe(options: SubscribeOptions): void {
    this.changeSubscription(options, false);
  }

  /** A new vuid: what follows belongs to nobody known yet (log-outs, shared devices). */
  anonymize(): void {
    this.vuid = renewVuid(this.win, this.options.cookieDomain);
  }

  /** The browser's current vuid. */
  getVuid(): string {
    return this.vuid;
  }

  /** Sends what is queued now, without waiting for the batch to fill. */
  flush(): void {
    this.outbox.flush();
  }

  /** The spec's inferred event fields: the page's, and the visit's (attribution, landing, days since last). */
  private inferred(): Fields {
    const fields: Fields = {
      ...pageFields(this.win),
      ...this.visit.attribution,
      landing: this.visit.landing,
    };
    if (this.visit.daysSinceLastVisit !== undefined)
      fields.days_since_last_visit = this.visit.daysSinceLastVisit;
    return fields;
  }

  private changeSubscription(options: SubscribeOptions, subscribed: boolean): void {
    const ids = subscriptionProblem(options);
    if (typeof ids === 'string') {
      options?.error?.(new Error(ids));
      return;
    }
    const further: Fields = { ...options };
    for (const name of ['list_id', 'email', 'success', 'error']) delete further[name];
    const address = options.email.trim();
    this.visit.touch(Date.now());
    // The further fields go to the profile, and with the page's fields to each update's list/subscribe
    // event (the API keeps the event fields among them).
    this.customer({ email: address }, further);
    const event = { ...this.inferred(), ...further };
    for (const list_id of ids)
      this.outbox.add('/v3/lists/subscriptions', { ...event, list_id, email: address, subscribed });
    options.success?.();
  }
}
