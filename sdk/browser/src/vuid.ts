import { load, randomId, readCookie, save, writeCookie } from './storage.js';

const NAME = 'vuid';

/**
 * The browser's id (spec "Identifiers": VUID, unique per browser): the `vuid` cookie, with a copy in
 * localStorage that restores it when the cookie was cleared or expired. Created once.
 */
export function readVuid(win: Window, cookieDomain?: string): string {
  const vuid = readCookie(win.document, NAME) || load<string>(win, NAME) || randomId(win);
  keep(win, vuid, cookieDomain);
  return vuid;
}

/** A new id for this browser (log-outs, shared devices): later calls are someone else's. */
export function renewVuid(win: Window, cookieDomain?: string): string {
  const vuid = randomId(win);
  keep(win, vuid, cookieDomain);
  return vuid;
}

function keep(win: Window, vuid: string, cookieDomain?: string): void {
  writeCookie(win.document, NAME, vuid, cookieDomain);
  save(win, NAME, vuid);
}
