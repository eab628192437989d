import { createHash } from 'node:crypto';

/*
 * The small pages an unsubscribe link shows in a browser. Every value is escaped; the only style is
 * inline and allowed by its hash, nothing else may load, and the form may post only to this origin.
 */

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}' +
  'button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}';

export const UNSUBSCRIBE_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  'x-content-type-options': 'nosniff',
  // The token is in the URL: a page it opened must not hand it on.
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

function page(title: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">` +
    `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`
  );
}

function what(listNames: readonly string[]): string {
  return listNames.length
    ? `from ${listNames.map((n) => `<strong>${escapeHtml(n)}</strong>`).join(', ')}`
    : 'from every message';
}

/** GET: asks before doing anything (mail scanners follow links; only the POST unsubscribes). */
export function confirmationPage(email: string, listNames: readonly string[]): string {
  return page(
    'Unsubscribe',
    `<h1>Unsubscribe</h1><p>Unsubscribe <strong>${escapeHtml(email)}</strong> ${what(listNames)}?</p>` +
      `<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">` +
      `<button type="submit">Unsubscribe</button></form>`,
  );
}

/** The answer to the form's POST in a browser. */
export function donePage(email: string, listNames: readonly string[]): string {
  return page(
    'Unsubscribed',
    `<h1>Unsubscribed</h1><p><strong>${escapeHtml(email)}</strong> is unsubscribed ${what(listNames)}.</p>`,
  );
}
