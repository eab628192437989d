import type { ChdbTransport } from '@cdp/store/chdb';

/** Customers a bus message of the seeded history carries, and the time its first message was accepted. */
export const PER_MESSAGE = 1_000;
export const T0 = 1_800_000_000_000;

/**
 * SQL expressions of a seeded customer's ids, for customer `number` of `numbers(N)`: its message's id, its
 * svc_id (`svcOf` for another row's number) and its born key, of the shape and length the processor
 * writes (derived in SQL, so not the ids `customerRecords` derives in JS).
 */
export function seededIds() {
  const msg = `concat(leftPad(lower(hex(intDiv(number, ${PER_MESSAGE}))), 8, '0'), '-7c1e-4b2a-9f3d-5e8a1c2b3d4e')`;
  const svcOf = (n: string) =>
    `concat('c_', substring(lower(hex(SHA1(concat(${msg.replaceAll('number', n)}, ':', toString(${n} % ${PER_MESSAGE}))))), 1, 24))`;
  const born = `concat('a', leftPad(toString(1 + intDiv(number, ${PER_MESSAGE})), 13, '0'), ':', leftPad(toString(number % ${PER_MESSAGE}), 3, '0'))`;
  return { msg, svcOf, svc: svcOf('number'), born };
}

/** Each of `customers` customers' email and vuid links, straight into the store's identity_links. */
export async function insertIdentityLinks(
  transport: ChdbTransport,
  db: string,
  customers: number,
): Promise<void> {
  const { msg, svc, born } = seededIds();
  for (const [kind, value] of [
    ['email', `concat('customer', toString(number), '@example.com')`],
    ['vuid', `concat('vuid-', toString(number))`],
  ] as const)
    await transport.exec(
      `INSERT INTO ${db}.identity_links (kind, value, svc_id, born, msg_id, created_at)
       SELECT '${kind}', ${value}, ${svc}, ${born}, ${msg}, toDateTime(${T0 / 1000} + intDiv(number, ${PER_MESSAGE}))
       FROM numbers(${customers})`,
    );
}
