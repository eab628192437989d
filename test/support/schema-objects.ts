import { postWithKey } from './api-calls.js';
import type { Platform } from './wirings.js';

/** A field of a custom object as POST /v3/schema/objects declares it. */
export interface FieldDeclaration {
  name: string;
  type: string;
  display_name: string;
  primary?: boolean;
  description?: string;
}

/**
 * The custom object the suites declare: stores, known by `store_id`, named `store` in relations, with a
 * city (`string` or `text`, as the suite tests) and the fields the suite adds after it.
 */
export function storesObject(city: 'string' | 'text', ...more: FieldDeclaration[]) {
  return {
    name: 'stores',
    display_name: 'Stores',
    alias: 'store',
    fields: [
      { name: 'store_id', type: 'string', display_name: 'Store ID', primary: true },
      { name: 'city', type: city, display_name: 'City' },
      ...more,
    ],
  };
}

/** Declares a field of an object (POST /v3/schema/objects/{object}/fields), answered 201. */
export async function declareField(p: Platform, key: string, object: string, field: FieldDeclaration) {
  expect((await postWithKey(p, key, `/v3/schema/objects/${object}/fields`, field)).status).toBe(201);
}
