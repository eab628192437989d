import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collector, eventBusContract, message, type BusTestOptions } from '../event-bus.contract.js';
import { eventually } from '../../../../test/support/eventually.js';
import { LocalLogEventBus } from './local-log-event-bus.adapter.js';

function harness() {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-bus-'));
  return {
    dir,
    open: (o: BusTestOptions = {}) => LocalLogEventBus.open(dir, { maxPendingBytes: 1 << 30, ...o }),
  };
}

eventBusContract('local log', harness);

describe('LocalLogEventBus specifics', () => {
  it('ignores a torn last line (a write cut by a crash) and keeps the complete ones', async () => {
    const h = harness();
    const bus = await h.open();
    await bus.publish(message('whole'));
    await bus.close();
    const segment = readdirSync(h.dir).find((f) => f.startsWith('segment-'))!;
    const { appendFileSync } = await import('node:fs');
    appendFileSync(join(h.dir, segment), '{"seq":99,"message":{"id":"torn"');
    const again = await h.open();
    const c = collector();
    again.consume(c.consumer);
    await eventually(() => c.seen.length === 1);
    expect(c.seen.map((d) => d.message.id)).toEqual(['whole']);
    await again.close();
  });

  it('deletes a segment once all its messages are settled and writes dead letters with their reason', async () => {
    const h = harness();
    const bus = await LocalLogEventBus.open(h.dir, {
      maxPendingBytes: 1 << 30,
      segmentBytes: 200,
      maxDeliveries: 1,
    });
    const c = collector((d) => (d.message.id === 'bad' ? 'dead-letter' : 'ack'));
    bus.consume(c.consumer);
    for (const id of ['x1', 'x2', 'bad', 'x3']) await bus.publish(message(id));
    await eventually(() => c.seen.length === 4);
    await bus.drained();
    await bus.close();
    const segments = readdirSync(h.dir).filter((f) => f.startsWith('segment-'));
    expect(segments.length).toBeLessThanOrEqual(1); // only the one last written to may remain
    const dead = readFileSync(join(h.dir, 'dead-letter.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(dead).toHaveLength(1);
    expect(dead[0].message.id).toBe('bad');
    expect(dead[0].reason).toBe('test says so');
  });

  it('never takes a new message for settled when numbering restarts after every segment was deleted', async () => {
    const h = harness();
    // A message delivered and settled; restarted, its (recovered, sealed) segment is settled and deleted.
    const first = await h.open();
    await first.publish(message('old'));
    await first.close();
    const second = await h.open();
    const c = collector();
    second.consume(c.consumer);
    await eventually(() => c.seen.length === 1);
    await second.drained();
    await second.close();
    expect(readdirSync(h.dir).filter((f) => f.startsWith('segment-'))).toEqual([]);
    // The next start numbers from 1 again: a new message, never delivered, then a crash (no close).
    const third = await h.open();
    await third.publish(message('new'));
    const fourth = await h.open();
    const d = collector();
    fourth.consume(d.consumer);
    await eventually(() => d.seen.length === 1);
    expect(d.seen.map((x) => x.message.id)).toEqual(['new']);
    await fourth.close();
    await third.close();
  });
});
