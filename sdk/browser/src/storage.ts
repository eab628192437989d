/** localStorage that never throws: private modes and full quotas make it refuse; the SDK goes on in memory. */
export function load<T>(win: Window, key: string): T | undefined {
  try {
    const raw = win.localStorage.getItem(key);
    return raw ? (JSON.parse(raw) as T) : undefined;
  } catch {
    return undefined;
  }
}

export function save(win: Window, key: string, value: unknown): void {
  try {
    if (value === undefined) win.localStorage.removeItem(key);
    else win.localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // quota or privacy mode: the data stays in memory for this page
  }
}

export function storageKeys(win: Window): string[] {
  try {
    return Object.keys(win.localStorage);
  } catch {
    return [];
  }
}

export function readCookie(doc: Document, name: string): string | undefined {
  for (const part of doc.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return decodeURIComponent(v.join('='));
  }
  return undefined;
}

/** A first-party cookie for two years, sent on top-level navigations only (SameSite=Lax). */
export function writeCookie(doc: Document, name: string, value: string, domain?: string): void {
  const secure = doc.location?.protocol === 'https:' ? '; Secure' : '';
  const scope = domain ? `; domain=${domain}` : '';
  doc.cookie = `${name}=${encodeURIComponent(value)}; path=/; max-age=63072000; SameSite=Lax${scope}${secure}`;
}

/** 128 random bits as hex. */
export function randomId(win: Window): string {
  const bytes = new Uint8Array(16);
  win.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
