import {
  LEAVE_AS_IS,
  MetadataConflictError,
  updateWithRetry,
  type MetadataStore,
} from './metadata-store.port.js';

/** Slot `n` of a group: the id appended there, and when (never earlier than the slot before it). */
export interface IndexSlot {
  id: string;
  at: number;
}

interface IndexHead {
  slot: number;
}

/** One page read newest first; `next` continues below it, absent when nothing valid is left. */
export interface IndexPage<T> {
  items: { slot: number; item: T }[];
  next?: number;
}

/**
 * An append-only sequence of ids per group (an account's activity entries, its exports), kept in one
 * metadata bucket and read newest first a page at a time, so a page costs its own reads (about two a
 * record: the slot and the record) whatever the group's history and the other groups hold. Only the
 * port's get/create/update are used, so it is the same on every driver.
 *
 * - Slot `n` of group `g` is the record `g/n`, created if absent: two appenders racing for a slot get
 *   distinct ones, and slots have no gaps (a slot is written whole or not at all).
 * - `g/head` remembers the last slot, advanced after the append. A crash in between leaves it behind,
 *   which costs nothing but a read: whoever reads it steps past it while the next slot exists.
 * - A slot's `at` is never earlier than the previous slot's, so slot order is time order even when two
 *   appenders' clocks or calls interleave.
 * - A slot whose record never got written (its writer died between the two writes) or that another
 *   slot replaced is skipped by the reader's `resolve`.
 */
export class NewestFirstIndex {
  constructor(
    private readonly metadata: MetadataStore,
    private readonly bucket: string,
  ) {}

  /** Appends `id` to the group's sequence; answers its slot and its time (`at`, or the previous slot's if later). */
  async append(group: string, id: string, at: number): Promise<{ slot: number; at: number }> {
    let { slot, value } = await this.last(group);
    for (;;) {
      const n = slot + 1;
      const next: IndexSlot = { id, at: Math.max(at, value?.at ?? 0) };
      try {
        await this.metadata.create(this.bucket, slotKey(group, n), next);
      } catch (err) {
        if (!(err instanceof MetadataConflictError)) throw err;
        // Another appender took slot n: try the one after it.
        slot = n;
        value = await this.read(group, n);
        continue;
      }
      await this.advance(group, n);
      return { slot: n, at: next.at };
    }
  }

  /**
   * Up to `limit` items newest first, from the slot below `before` (the previous page's `next`), or from
   * the newest. `resolve` reads a slot's record and answers undefined for one to skip.
   */
  async page<T>(
    group: string,
    limit: number,
    before: number | undefined,
    resolve: (slot: IndexSlot, n: number) => Promise<T | undefined>,
  ): Promise<IndexPage<T>> {
    const { slot: last } = await this.last(group);
    let top = before === undefined ? last : Math.min(before - 1, last);
    const items: IndexPage<T>['items'] = [];
    // Read one item past the page: `next` is given only when something valid follows.
    while (top >= 1 && items.length <= limit) {
      const want = limit + 1 - items.length;
      const slots = Array.from({ length: Math.min(want, top) }, (_, i) => top - i);
      top -= slots.length;
      const found = await Promise.all(
        slots.map(async (n) => {
          const value = await this.read(group, n);
          return value ? resolve(value, n) : undefined;
        }),
      );
      found.forEach((item, i) => {
        if (item !== undefined) items.push({ slot: slots[i]!, item });
      });
    }
    const page = items.slice(0, limit);
    return items.length > limit ? { items: page, next: page.at(-1)!.slot } : { items: page };
  }

  /** The group's last slot and its value: the head, then the slots written after it was last advanced. */
  private async last(group: string): Promise<{ slot: number; value?: IndexSlot }> {
    let slot = (await this.metadata.get<IndexHead>(this.bucket, headKey(group)))?.value.slot ?? 0;
    let value = slot > 0 ? await this.read(group, slot) : undefined;
    for (;;) {
      const after = await this.read(group, slot + 1);
      if (!after) return value ? { slot, value } : { slot };
      slot += 1;
      value = after;
    }
  }

  private async read(group: string, n: number): Promise<IndexSlot | undefined> {
    return (await this.metadata.get<IndexSlot>(this.bucket, slotKey(group, n)))?.value;
  }

  /**
   * Moves the head up to `n` unless it is already there. Only a hint: when it fails, readers find the
   * slots past it anyway, so a failure here must not fail an append that is already durable.
   */
  private async advance(group: string, n: number): Promise<void> {
    await updateWithRetry<IndexHead>(
      this.metadata,
      this.bucket,
      headKey(group),
      (head) => (head && head.value.slot >= n ? LEAVE_AS_IS : { slot: n }),
      { attempts: 5 },
    ).catch(() => undefined);
  }
}

const slotKey = (group: string, n: number) => `${group}/${n}`;
const headKey = (group: string) => `${group}/head`;
