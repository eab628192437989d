import { drop, DUPLICATE, type Delivery, type DeliveryResult } from '@cdp/bus';

/**
 * Processes the first delivery of each message id in a batch; a repeat is dropped as a duplicate when
 * its first copy was stored, and shares its first copy's failure otherwise. A resent request (same
 * `Idempotency-Key`, same id) can reach the processor in the same batch as the copy an earlier attempt
 * published: the embedded bus keeps both, JetStream too once the duplicate window has passed. The
 * store skips ids it already holds, but not an id twice within one insert.
 */
export async function processOncePerMessage(
  batch: readonly Delivery[],
  process: (batch: readonly Delivery[]) => Promise<DeliveryResult[]>,
): Promise<DeliveryResult[]> {
  const firsts = new Map<string, Delivery>();
  const repeats: Delivery[] = [];
  for (const delivery of batch) {
    if (firsts.has(delivery.message.id)) repeats.push(delivery);
    else firsts.set(delivery.message.id, delivery);
  }
  if (repeats.length === 0) return process(batch);
  const settled = await process([...firsts.values()]);
  const byId = new Map(settled.map((s) => [s.delivery.message.id, s.result]));
  return [
    ...settled,
    ...repeats.map((delivery): DeliveryResult => {
      const first = byId.get(delivery.message.id);
      if (!first) return { delivery, result: { type: 'retry', reason: 'its first copy was not settled' } };
      return { delivery, result: first.type === 'ok' ? drop(DUPLICATE) : first };
    }),
  ];
}
