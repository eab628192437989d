import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Metrics } from './metrics.js';

/**
 * The Grafana dashboard (infra/grafana) queries series by name: a metric renamed or removed here would
 * leave an empty panel that nobody notices. Every series a panel asks for is one the processes expose.
 */
describe('the Grafana dashboard', () => {
  const dashboard = JSON.parse(
    readFileSync(join(process.cwd(), 'infra/grafana/dashboards/cdp-overview.json'), 'utf8'),
  ) as { panels: { title?: string; targets?: { expr?: string }[] }[] };

  it('queries only series the processes expose', async () => {
    const metrics = new Metrics();
    metrics.watchBus(() => Promise.resolve(undefined));
    const families = (await metrics.registry.getMetricsAsJSON()).map((m) => m.name);
    // A histogram's series are its name with _bucket, _count or _sum.
    const exposed = new Set(
      families.flatMap((name) => [name, `${name}_bucket`, `${name}_count`, `${name}_sum`]),
    );
    const queried = dashboard.panels.flatMap((panel) =>
      (panel.targets ?? []).flatMap((target) =>
        [...(target.expr ?? '').matchAll(/\b(cdp|process|nodejs)_[a-z0-9_]+/g)].map((m) => ({
          panel: panel.title,
          series: m[0],
        })),
      ),
    );
    expect(queried.length).toBeGreaterThan(20);
    expect(queried.filter((q) => !exposed.has(q.series))).toEqual([]);
  });
});
