import { AsyncLocalStorage } from 'node:async_hooks';

const scope = new AsyncLocalStorage<true>();

/**
 * Runs a route as another attempt of a request that may have been published already (its earlier
 * attempt died or failed after reaching the bus): what it publishes is marked `resend`.
 */
export function asResend<T>(run: () => T): T {
  return scope.run(true, run);
}

export function isResend(): boolean {
  return scope.getStore() === true;
}
