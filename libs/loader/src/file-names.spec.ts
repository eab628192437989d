import { fileKind, nameProblem } from './file-names.js';

describe('bulk file names (spec "Bulk file ingestion")', () => {
  it.each([
    ['svc_products_2024.csv', { dataType: 'products', format: 'csv', gzip: false }],
    ['svc_customers.csv.gz', { dataType: 'customers', format: 'csv', gzip: true }],
    ['svc_orders-1.csv', { dataType: 'orders', format: 'csv', gzip: false }],
    ['svc_events_a.csv', { dataType: 'events', format: 'csv', gzip: false }],
    ['nightly_customers.svc', { dataType: 'customers', format: 'jsonl', gzip: false }],
    ['products.svc', { dataType: 'products', format: 'jsonl', gzip: false }],
    ['x-events.svc.gz', { dataType: 'events', format: 'jsonl', gzip: true }],
    ['orders.svc', { dataType: 'orders', format: 'jsonl', gzip: false }],
  ])('reads %s', (name, kind) => {
    expect(fileKind(name)).toEqual(kind);
    expect(nameProblem(name)).toBeUndefined();
  });

  it.each([
    'events.csv',
    'svc_event.csv',
    'svc_events.json',
    'svc_events.csv.zip',
    'svc_events_1.CSV',
    'customers.svc.bak',
    '../svc_events.csv',
    'a/svc_events.csv',
    'svc_events\\..\\x.csv',
    '.svc_events.csv',
    '..',
    '',
    'svc_events\n.csv',
    `svc_events_${'x'.repeat(300)}.csv`,
    'svc_events.csv.partial-1234.csv',
  ])('refuses %j', (name) => {
    expect(nameProblem(name)).toEqual(expect.any(String));
  });
});
