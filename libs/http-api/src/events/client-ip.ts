import type { Principal } from '@cdp/accounts';
import type { EventRecord } from '@cdp/domain';

/**
 * An event's `ip` (spec event table: the customer's IP, inferred) is the address the request came from,
 * as Fastify reads it through the configured trusted proxies (`CDP_TRUSTED_PROXIES`), whenever the public
 * key sent it: that key is in every visitor's hands, so a body's `ip` proves nothing and is replaced. A
 * private key is a server's, sending on behalf of its customers: its `ip` is kept as sent, and none is
 * filled in (the server's own address is not the customer's).
 */
export function inferClientIp(records: EventRecord[], principal: Principal, clientIp: string): void {
  if (principal.private) return;
  for (const record of records) record.data.ip = clientIp;
}
