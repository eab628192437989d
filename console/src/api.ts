/** The console's calls: same origin, the session cookie sent by the browser, the CSRF token from memory. */
let csrf = '';

export function setCsrf(token: string): void {
  csrf = token;
}

export class CallError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly invalids: { field: unknown; reason: string }[] = [],
  ) {
    super(message);
  }
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { 'x-cdp-console': '1' };
  if (method !== 'GET') headers['x-csrf-token'] = csrf;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/console/api/${path}`, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const detail = (json.detail ?? {}) as {
      message?: string;
      invalids?: { field: unknown; reason: string }[];
    };
    const invalids = detail.invalids ?? [];
    const message =
      detail.message ?? (invalids.map((i) => `${String(i.field)}: ${i.reason}`).join('; ') || res.statusText);
    throw new CallError(res.status, message, invalids);
  }
  return json as T;
}

export interface SessionView {
  account: { name: string; tracker_id: string };
  csrf: string;
  expires_at: string;
}
