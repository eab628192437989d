import { Metrics, parseExposition, sampleValue } from '@cdp/metrics';
import { LoadMeter } from './load-meter.js';

describe('LoadMeter', () => {
  const events = { data_type: 'events' };
  const scrape = async (metrics: Metrics) => parseExposition(await metrics.exposition());

  it('adds what was read since the last report, so reports of running totals count each record once', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const meter = new LoadMeter(metrics, 'events');
    meter.read({ read: 500, invalid: 1, dropped: 3 }, 40_000);
    meter.read({ read: 1200, invalid: 4, dropped: 3 }, 96_000);
    meter.read({ read: 1200, invalid: 4, dropped: 3 }, 96_000); // the end of the file: nothing new
    meter.loaded(500);
    meter.loaded(696);
    const samples = await scrape(metrics);
    expect(sampleValue(samples, 'cdp_bulk_records_read_total', events)).toBe(1200);
    expect(sampleValue(samples, 'cdp_bulk_records_invalid_total', events)).toBe(4);
    expect(sampleValue(samples, 'cdp_bulk_records_dropped_total', events)).toBe(3);
    expect(sampleValue(samples, 'cdp_bulk_bytes_read_total', events)).toBe(96_000);
    expect(sampleValue(samples, 'cdp_bulk_records_loaded_total', events)).toBe(1196);
  });

  it('counts each file apart, and a file of no data type under unknown', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    new LoadMeter(metrics, 'events').read({ read: 10, invalid: 0, dropped: 0 }, 100);
    new LoadMeter(metrics, 'events').read({ read: 5, invalid: 0, dropped: 0 }, 50);
    new LoadMeter(metrics, null).read({ read: 0, invalid: 0, dropped: 0 }, 0);
    const samples = await scrape(metrics);
    expect(sampleValue(samples, 'cdp_bulk_records_read_total', events)).toBe(15);
    expect(sampleValue(samples, 'cdp_bulk_bytes_read_total', events)).toBe(150);
    expect(samples.some((s) => s.labels.data_type === 'unknown')).toBe(true);
  });

  it('counts nothing, and fails nothing, without metrics', () => {
    const meter = new LoadMeter(undefined, 'orders');
    expect(() => {
      meter.read({ read: 1, invalid: 0, dropped: 0 }, 1);
      meter.loaded(1);
    }).not.toThrow();
  });
});
