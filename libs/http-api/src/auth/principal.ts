import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '@cdp/accounts';

export type AuthedRequest = FastifyRequest & { principal?: Principal };

/** The account the request's key resolved to; set by the auth guard, never taken from the payload. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new Error('route reached without authentication');
  return principal;
});

/**
 * Which key sent a batch, as its message records it for the consent history (`key` of the subscription,
 * identifier-update and opt-out messages): `public`, or `private:<key id>`.
 */
export function sentBy(principal: Principal): string {
  return principal.private ? `private:${principal.keyId ?? 'unknown'}` : 'public';
}
