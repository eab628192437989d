import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccountsService, constantTimeEqual } from '@cdp/accounts';
import { APP_CONFIG, type AppConfig } from '@cdp/config';
import { ApiError } from '@cdp/contracts';
import { ACCESS_KEY, type Access } from '@cdp/http-common';
import type { AuthedRequest } from './principal.js';
import { keyCameFromQuery } from '../browser/browser-requests.js';

/**
 * One guard for every route. V3 routes read `x-api-key`; v2 routes read `Svc-Tracker-Id` (spec
 * "Authentication" rules 1-2); the admin API reads `Authorization: Bearer <CDP_ADMIN_TOKEN>`.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly accounts: AccountsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true; // bus handlers: the API authenticated the request
    const access =
      this.reflector.getAllAndOverride<Access | undefined>(ACCESS_KEY, [
        context.getHandler(),
        context.getClass(),
      ]) ?? 'private';
    const request = context.switchToHttp().getRequest<AuthedRequest>();
    if (access === 'none') return true;
    if (access === 'admin') return this.admin(request);
    const isV2 = request.url.startsWith('/v2/');
    const key = header(request, isV2 ? 'svc-tracker-id' : 'x-api-key');
    const principal = await this.accounts.authenticate(key);
    if (access === 'private' && !principal.private) throw ApiError.forbidden();
    if (principal.private && (keyCameFromQuery(request) || fromAnotherSite(request)))
      throw ApiError.forbidden(PRIVATE_KEY_IN_BROWSER);
    request.principal = principal;
    return true;
  }

  private admin(request: AuthedRequest): boolean {
    const token = this.config.adminToken;
    const sent = header(request, 'authorization')?.match(/^Bearer (.+)$/i)?.[1];
    if (!token || !sent || !constantTimeEqual(sent, token)) throw ApiError.unauthorized();
    return true;
  }
}

const PRIVATE_KEY_IN_BROWSER =
  'a private key is never accepted from a browser or in a URL: it belongs on servers; browsers send the public key';

/**
 * A browser calling from another site's page: it sends `Origin`, naming a site other than this API.
 * A private key there is in the hands of every visitor. (A page the API serves itself is not refused.)
 */
function fromAnotherSite(request: AuthedRequest): boolean {
  const origin = header(request, 'origin');
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== header(request, 'host');
  } catch {
    return true; // `null` (sandboxed pages, file://) and anything unreadable
  }
}

function header(request: AuthedRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
