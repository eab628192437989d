/** Deterministic test data: a seeded generator, so a failure replays the same way. */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pageviews(count: number, prefix = 'v', start = 0): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    type: 'pageview',
    identifiers: { vuid: `${prefix}${start + i}` },
    data: { page: `/page/${start + i}`, ts: 1_700_000_000 + i },
  }));
}
