import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Inspector, type InspectorListener, type InspectorView } from '../inspector.port.js';
import type { InspectorEntry } from '../inspector-entry.js';

export interface NatsInspectorOptions {
  /** Subjects are `<prefix>.inspector.…` (the deployment's NATS prefix). */
  prefix: string;
  bound?: number;
  /** How often a replica with open views says so; a watch lapses after three missed beats. */
  heartbeatMs?: number;
}

/**
 * The scaled-out driver: core NATS subjects, no storage at all. Entries go to
 * `<prefix>.inspector.entries.<account>`, which only replicas with an open view subscribe to. Which
 * accounts are watched is itself a subject: a replica with open views publishes their accounts on
 * `<prefix>.inspector.watch` every heartbeat (and at once when a view opens), every process keeps what it
 * heard with a time to live, and a process that starts asks on `<prefix>.inspector.who`.
 */
export class NatsInspector extends Inspector {
  private readonly views = new Map<string, { listeners: Set<InspectorListener>; sub: Subscription }>();
  /** Accounts some replica watches, until when (this process's clock). */
  private readonly watched = new Map<string, number>();
  private readonly subs: Subscription[];
  private readonly timer: NodeJS.Timeout;
  private readonly heartbeatMs: number;
  private readonly encoder = new TextEncoder();

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: NatsInspectorOptions,
  ) {
    super(options.bound);
    this.heartbeatMs = options.heartbeatMs ?? 2_000;
    this.subs = [
      nc.subscribe(this.subject('watch'), {
        callback: (err, msg) => {
          if (err) return;
          try {
            const { accounts } = msg.json<{ accounts: string[] }>();
            const until = Date.now() + 3 * this.heartbeatMs;
            for (const account of accounts) this.watched.set(account, until);
          } catch {
            // a malformed beat is ignored; the next one counts
          }
        },
      }),
      nc.subscribe(this.subject('who'), { callback: () => this.beat() }),
    ];
    this.timer = setInterval(() => this.beat(), this.heartbeatMs);
    this.timer.unref();
    nc.publish(this.subject('who'));
  }

  watching(account: string): boolean {
    if (this.views.has(account)) return true;
    const until = this.watched.get(account);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.watched.delete(account);
    return false;
  }

  open(account: string, listener: InspectorListener): InspectorView {
    let view = this.views.get(account);
    if (!view) {
      const listeners = new Set<InspectorListener>();
      const sub = this.nc.subscribe(this.subject(`entries.${account}`), {
        callback: (err, msg) => {
          if (err) return;
          let entries: InspectorEntry[];
          try {
            entries = msg.json<InspectorEntry[]>();
          } catch {
            return;
          }
          for (const l of listeners) for (const entry of entries) l(entry);
        },
      });
      this.views.set(account, (view = { listeners, sub }));
      this.beat();
    }
    view.listeners.add(listener);
    const current = view;
    return {
      close: () => {
        current.listeners.delete(listener);
        if (current.listeners.size === 0 && this.views.get(account) === current) {
          this.views.delete(account);
          current.sub.unsubscribe();
          this.forget(account);
        }
      },
    };
  }

  protected send(account: string, entries: InspectorEntry[]): void {
    if (this.nc.isClosed()) return;
    try {
      this.nc.publish(this.subject(`entries.${account}`), this.encoder.encode(JSON.stringify(entries)));
    } catch {
      // NATS away: the inspector shows less, the request is not affected
    }
  }

  private beat(): void {
    if (this.views.size === 0 || this.nc.isClosed()) return;
    try {
      this.nc.publish(this.subject('watch'), JSON.stringify({ accounts: [...this.views.keys()] }));
    } catch {
      // the next beat tries again
    }
  }

  private subject(name: string): string {
    return `${this.options.prefix}.inspector.${name}`;
  }

  close(): Promise<void> {
    clearInterval(this.timer);
    for (const view of this.views.values()) view.sub.unsubscribe();
    for (const sub of this.subs) sub.unsubscribe();
    this.views.clear();
    return Promise.resolve();
  }
}
