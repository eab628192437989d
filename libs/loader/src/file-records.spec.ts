import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { fileKind } from './file-names.js';
import { readFile, type FileItem } from './file-records.js';
import type { LoadContext } from './record-rules.js';

const context: LoadContext = {
  nowMs: Date.UTC(2024, 0, 1),
  customers: { tier: 'number' },
  events: { gift_note: 'string' },
  products: { in_stock: 'boolean' },
};

async function items(name: string, text: string | Buffer): Promise<{ items: FileItem[]; dropped: string[] }> {
  const reading = readFile(Readable.from([Buffer.from(text)]), fileKind(name)!, context);
  const out: FileItem[] = [];
  for await (const item of reading.items) out.push(item);
  return { items: out, dropped: [...reading.dropped] };
}

const problems = (item: FileItem) => (Array.isArray(item.result) ? item.result : []);
const record = (item: FileItem) =>
  (Array.isArray(item.result) ? undefined : item.result.record) as unknown as Record<string, unknown>;

describe('CSV files', () => {
  it('reads RFC 4180 quoting and refuses what the spec calls invalid, record by record', async () => {
    const { items: read } = await items(
      'svc_events_1.csv',
      [
        'type,email,page',
        'pageview,a@x.com,"/a, ""quoted"""',
        'pageview,b@x.com,/b,extra',
        'pageview,"c\nc@x.com",/c',
        'pageview,d@x.com',
        'pageview,not-an-email,/e',
        'pageview,f@x.com,/f',
        '',
      ].join('\n'),
    );
    expect(read.map((i) => [i.line, Array.isArray(i.result)])).toEqual([
      [2, false],
      [3, true],
      [4, true],
      [6, true],
      [7, true],
      [8, false],
    ]);
    expect((record(read[0]!).data as Record<string, unknown>).page).toBe('/a, "quoted"');
    expect(problems(read[1]!)).toEqual([{ field: 'line', reason: 'has 4 fields; the header has 3' }]);
    expect(problems(read[2]!)).toEqual([{ field: 'email', reason: expect.stringContaining('newline') }]);
    expect(problems(read[4]!)).toEqual([{ field: 'email', reason: expect.any(String) }]);
  });

  it('reads gzip, values by the data types table, and drops unknown columns', async () => {
    const { items: read, dropped } = await items(
      'svc_customers.csv.gz',
      gzipSync('customer_id,email,tier,opted_in,shoe\nc1,a@x.com,3.5,true,42\nc2,,x,1,\n'),
    );
    expect(dropped).toEqual(['shoe']);
    expect(record(read[0]!)).toMatchObject({ attributes: { customer_id: 'c1', tier: 3.5, opted_in: true } });
    expect(read[0]!.dropped).toBe(true);
    expect(problems(read[1]!)).toEqual([{ field: 'tier', reason: expect.any(String) }]);
    expect(read[1]!.dropped).toBe(false);
  });

  it('takes a date alone as midnight UTC and a missing ts as the time the file was seen', async () => {
    const { items: read } = await items(
      'svc_events.csv',
      'type,email,ts\nx,a@x.com,2024-03-02\nx,a@x.com,\n',
    );
    expect(record(read[0]!).ts).toBe(Date.UTC(2024, 2, 2));
    expect(record(read[1]!).ts).toBe(context.nowMs);
  });

  it('reads every record of a file whose lines end in a mix of CRLF, LF and CR', async () => {
    const { items: read } = await items(
      'svc_customers.csv',
      'customer_id,tier\r\nc1,1\nc2,2\r\nc3,"3"\rc4,4\n',
    );
    expect(read.map((i) => [i.line, (record(i).attributes as Record<string, unknown>).customer_id])).toEqual([
      [2, 'c1'],
      [3, 'c2'],
      [4, 'c3'],
      [5, 'c4'],
    ]);
  });

  it('refuses a header that names a column twice', async () => {
    await expect(items('svc_events.csv', 'type,type\nx,y\n')).rejects.toThrow(/twice/);
  });
});

describe('orders CSV (rules 4-8)', () => {
  const header =
    'customer_id,action,order_id,ts,subtotal,item_product_id,item_quantity,item_subtotal,gift_note,item_color';

  it('groups consecutive lines into orders and sums item subtotals', async () => {
    const { items: read, dropped } = await items(
      'svc_orders.csv',
      [
        header,
        'c1,purchase,o1,2024-01-01,,p1,1,10,hi,red',
        ',,,,,p2,2,20,,blue',
        'c1,purchase,o1,2024-01-02,,p3,1,5,,',
        'c1,return,o1,2024-01-02,7,p3,1,5,,',
        '',
      ].join('\n'),
    );
    expect(dropped).toEqual(['item_color']);
    expect(read.map((i) => [i.line, i.lines])).toEqual([
      [2, 2],
      [4, 1],
      [5, 1],
    ]);
    const first = record(read[0]!) as { order: { items: unknown[] }; data: Record<string, unknown> };
    expect(first.order.items).toEqual([
      { product_id: 'p1', quantity: 1, subtotal: 10 },
      { product_id: 'p2', quantity: 2, subtotal: 20 },
    ]);
    expect(first.data.gift_note).toBe('hi');
    expect((record(read[2]!) as { action: string; order: { subtotal: number } }).order.subtotal).toBe(7);
  });

  it('leaves out a whole order whose custom value differs between its lines', async () => {
    const { items: read } = await items(
      'svc_orders.csv',
      [header, 'c1,purchase,o1,2024-01-01,,p1,1,10,a,', 'c1,purchase,o1,2024-01-01,,p2,1,10,b,', ''].join(
        '\n',
      ),
    );
    expect(read).toHaveLength(1);
    expect(read[0]!.lines).toBe(2);
    expect(problems(read[0]!)).toEqual([{ field: 'gift_note', reason: expect.stringContaining('line 3') }]);
  });
});

describe('JSON-lines files', () => {
  it('reads {type, data} lines as the API payloads, with bulk order items in text', async () => {
    const { items: read } = await items(
      'x_events.svc',
      [
        JSON.stringify({ type: 'event', data: { type: 'pageview', identifiers: { email: 'a@x.com' } } }),
        JSON.stringify({
          type: 'order',
          data: {
            action: 'purchase',
            identifiers: { customer_id: 'c1' },
            data: { order: { order_id: 'o1', items: [{ sku: 'S', quantity: '2', subtotal: '3.5' }] } },
          },
        }),
        JSON.stringify({ type: 'customer', data: {} }),
        '{not json',
        '',
      ].join('\n'),
    );
    expect(read).toHaveLength(4);
    expect((record(read[1]!) as { order: { items: unknown[] } }).order.items).toEqual([
      { sku: 'S', quantity: 2, subtotal: 3.5 },
    ]);
    expect(problems(read[2]!)).toEqual([
      {
        field: 'type',
        reason: 'must be an event type in an events file (customers go in a customers file)',
      },
    ]);
    expect(problems(read[3]!)).toEqual([{ field: 'line', reason: 'is not a JSON object' }]);
  });

  it('names a problem by the field the line holds', async () => {
    const { items: read } = await items(
      'x_customers.svc',
      JSON.stringify({ type: 'customer', data: { email: 'not-an-email', tier: 'x' } }),
    );
    expect(problems(read[0]!)).toEqual(
      expect.arrayContaining([{ field: 'data.tier', reason: expect.any(String) }]),
    );
    expect(problems(read[0]!).map((p) => p.field)).not.toContain('data.attributes.tier');
  });

  it("reads the original's own {type, data} bodies: identifiers and action inside data", async () => {
    const { items: read } = await items(
      'x_events.svc',
      [
        JSON.stringify({ type: 'pageview', data: { email: 'a@x.com', page: '/home', gift_note: 'hi' } }),
        JSON.stringify({
          type: 'order',
          data: {
            action: 'purchase',
            email: 'a@x.com',
            order: { order_id: 'o2', items: [{ product_id: 'p1', quantity: '2', subtotal: '3.5' }] },
          },
        }),
        JSON.stringify({ type: 'pageview', data: { page: '/no-one' } }),
        JSON.stringify({ type: 'product', data: { action: 'detail', vuid: 'v1', product_id: 'p1' } }),
      ].join('\n'),
    );
    expect(record(read[0]!)).toMatchObject({
      type: 'pageview',
      identifiers: { email: 'a@x.com' },
      data: { page: '/home', gift_note: 'hi' },
    });
    expect(record(read[1]!)).toMatchObject({
      type: 'order',
      action: 'purchase',
      identifiers: { email: 'a@x.com' },
      order: { order_id: 'o2', items: [{ product_id: 'p1', quantity: 2, subtotal: 3.5 }] },
    });
    expect(problems(read[2]!)).toEqual([{ field: 'data', reason: expect.any(String) }]);
    expect(record(read[3]!)).toMatchObject({
      type: 'product',
      action: 'detail',
      identifiers: { vuid: 'v1' },
    });
  });

  it('reads customers flat (the /v2/entities data) or as {attributes}, naming problems where they sit', async () => {
    const { items: read } = await items(
      'x_customers.svc',
      [
        JSON.stringify({ type: 'customer', data: { email: 'a@x.com', first_name: 'Ann', tier: 2 } }),
        JSON.stringify({ type: 'customer', data: { attributes: { email: 'b@x.com' } } }),
        JSON.stringify({ type: 'customer', data: { email: 'c@x.com', gender: 'X' } }),
        JSON.stringify({ type: 'customer', data: { attributes: { email: 'd@x.com', gender: 'X' } } }),
        JSON.stringify({ type: 'customer', data: { first_name: 'Nobody' } }),
      ].join('\n'),
    );
    expect(record(read[0]!)).toMatchObject({
      identifiers: { email: 'a@x.com' },
      attributes: { email: 'a@x.com', first_name: 'Ann', tier: 2 },
    });
    expect(record(read[1]!)).toMatchObject({ identifiers: { email: 'b@x.com' } });
    expect(problems(read[2]!).map((p) => p.field)).toEqual(['data.gender']);
    expect(problems(read[3]!).map((p) => p.field)).toEqual(['data.attributes.gender']);
    expect(problems(read[4]!).map((p) => p.field)).toEqual(['data']);
  });

  it('names the type a file takes, with its article', async () => {
    const { items: read } = await items('x_orders.svc', JSON.stringify({ type: 'customer', data: {} }));
    expect(problems(read[0]!)).toEqual([{ field: 'type', reason: 'must be order in an orders file' }]);
  });
});
