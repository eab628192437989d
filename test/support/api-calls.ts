import type { Platform } from './wirings.js';

/** POSTs `body` to the API with an API key, as a client sends it; the test asserts the answer. */
export function postWithKey(p: Platform, key: string, path: string, body: unknown) {
  return p
    .http()
    .post(path)
    .set('x-api-key', key)
    .send(body as object);
}

/** GETs `path` from the API with an API key. */
export function getWithKey(p: Platform, key: string, path: string) {
  return p.http().get(path).set('x-api-key', key);
}
