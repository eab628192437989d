import { orderStateContract } from '../order-state.contract.js';
import { MemoryOrderState } from './memory-order-state.adapter.js';

orderStateContract('memory', () => Promise.resolve(new MemoryOrderState()));

describe('MemoryOrderState retention', () => {
  const purchase = (orderId: string, id = `p-${orderId}`) =>
    ({ id, orderId, kind: 'event', action: 'purchase', ts: 1, fields: {}, subtotal: 10_000 }) as const;

  it('forgets an order its retention after its last applied change, as the Redis keys expire', async () => {
    const clock = { now: 1_000_000 };
    const state = new MemoryOrderState(60_000, () => clock.now);
    await state.apply('acc', [purchase('o1'), purchase('o2')]);
    clock.now += 40_000;
    // A change to o2 gives it its full retention again; a repeated change does not.
    await state.apply('acc', [{ ...purchase('o2'), id: 'r-o2', action: 'refund' }]);
    await state.apply('acc', [purchase('o1')]);
    clock.now += 20_000;
    expect(await state.get('acc', 'o1')).toBeUndefined();
    expect((await state.get('acc', 'o2'))!.adjustments).toBe(1);
    // Forgotten means forgotten: its purchase counts again, as of an unknown order.
    const [again] = (await state.apply('acc', [purchase('o1')])).outcomes;
    expect(again!.applied).toBe(true);
    clock.now += 40_000;
    expect(await state.get('acc', 'o2')).toBeUndefined();
    // The next batch drops the expired orders from memory in passing.
    await state.apply('acc', [purchase('o3')]);
    expect((await state.health()).detail).toBe('2 order(s)');
  });
});
