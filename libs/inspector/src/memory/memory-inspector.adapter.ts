import { Inspector, type InspectorListener, type InspectorView } from '../inspector.port.js';
import type { InspectorEntry } from '../inspector-entry.js';

/** Entries kept per watched account, so that a second tab (or a reload) starts with the latest ones. */
export const RING_SIZE = 100;

/**
 * The embedded driver: views in this process, and a ring buffer of the latest entries per watched
 * account. An account nobody watches has neither: its buffer goes with its last view.
 */
export class MemoryInspector extends Inspector {
  private readonly views = new Map<string, Set<InspectorListener>>();
  private readonly rings = new Map<string, InspectorEntry[]>();

  watching(account: string): boolean {
    return this.views.has(account);
  }

  open(account: string, listener: InspectorListener): InspectorView {
    let listeners = this.views.get(account);
    if (!listeners) this.views.set(account, (listeners = new Set()));
    for (const entry of this.rings.get(account) ?? []) listener(entry);
    listeners.add(listener);
    return {
      close: () => {
        listeners.delete(listener);
        if (listeners.size === 0 && this.views.get(account) === listeners) {
          this.views.delete(account);
          this.rings.delete(account);
          this.forget(account);
        }
      },
    };
  }

  protected send(account: string, entries: InspectorEntry[]): void {
    let ring = this.rings.get(account);
    if (!ring) this.rings.set(account, (ring = []));
    ring.push(...entries);
    if (ring.length > RING_SIZE) ring.splice(0, ring.length - RING_SIZE);
    for (const listener of this.views.get(account) ?? []) {
      for (const entry of entries) listener(entry);
    }
  }

  close(): Promise<void> {
    this.views.clear();
    this.rings.clear();
    return Promise.resolve();
  }
}
