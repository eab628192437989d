import { Window as HappyWindow } from 'happy-dom';

/** What a test's fake `fetch` was called with. */
export interface Sent {
  url: string;
  keepalive: boolean;
  headers: Record<string, string>;
  body: unknown[];
}

/** A fake network: answers each request with the next status given (200 once they run out). */
export interface FakeNetwork {
  sent: Sent[];
  answer(...statuses: (number | 'offline' | [number, Record<string, string>])[]): void;
}

/**
 * A happy-dom window at `url` with `referrer`, its `fetch` replaced by a fake network. `storage` seeds
 * localStorage (another page of the same site); sessionStorage is per window, as per tab.
 */
export function testWindow(
  url: string,
  referrer = '',
  storage: Record<string, string> = {},
): { win: Window; net: FakeNetwork; close: () => Promise<void> } {
  const happy = new HappyWindow({ url });
  const win = happy as unknown as Window;
  Object.defineProperty(win.document, 'referrer', { value: referrer });
  win.document.title = 'Test page';
  for (const [k, v] of Object.entries(storage)) win.localStorage.setItem(k, v);
  const answers: (number | 'offline' | [number, Record<string, string>])[] = [];
  const net: FakeNetwork = { sent: [], answer: (...s) => answers.push(...s) };
  const fake = (input: string, init: RequestInit) => {
    net.sent.push({
      url: input,
      keepalive: init.keepalive === true,
      headers: init.headers as Record<string, string>,
      body: JSON.parse(init.body as string) as unknown[],
    });
    const next = answers.shift() ?? 200;
    if (next === 'offline') return Promise.reject(new TypeError('Failed to fetch'));
    const [status, headers] = Array.isArray(next) ? next : [next, {}];
    return Promise.resolve({ status, headers: { get: (name: string) => headers[name] ?? null } });
  };
  Object.defineProperty(win, 'fetch', { value: fake, configurable: true });
  return { win, net, close: () => happy.happyDOM.close() };
}

/** Everything in a window's localStorage, to open another page of the same site with it. */
export function storageOf(win: Window): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(win.localStorage)) out[key] = win.localStorage.getItem(key)!;
  return out;
}

/** Lets promise callbacks (the fake fetch's answers) run. */
export const settle = () => new Promise((r) => setImmediate(r));
