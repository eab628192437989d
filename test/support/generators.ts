export function pageviews(count: number, prefix = 'v', start = 0): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    type: 'pageview',
    identifiers: { vuid: `${prefix}${start + i}` },
    data: { page: `/page/${start + i}`, ts: 1_700_000_000 + i },
  }));
}
