import type { CustomValue } from './custom-fields.js';
import type { FieldType } from './field-types.js';

/** The product fields of the spec's product table. */
export const PRODUCT_FIELDS: Readonly<Record<string, FieldType>> = {
  product_id: 'string',
  category: 'string',
  name: 'string',
  brand: 'string',
  sku: 'string',
  upc: 'string',
  image_url: 'string',
  price: 'number',
  parent_product_id: 'string',
};

/** The delimiter of a hierarchical category, spaces included (spec "Product fields"). */
export const CATEGORY_DELIMITER = ' > ';

/** Booleans come from the account's custom product fields. */
export type ProductValue = string | number | boolean;

/** A product update as it travels to the processor: the supplied fields; null unsets (spec "Entities (v2)"). */
export interface ProductRecord {
  product_id: string;
  fields: Record<string, ProductValue | null>;
  dropped?: string[];
}

/**
 * A product-feed record: `product_id` is required by the schema; fields neither the spec nor the account
 * defines are dropped; `""` and null unset. Values are kept as given: a category such as
 * `Electronics > Computers > Laptops` is stored as it is, delimiter included.
 */
export function normalizeProduct(
  data: Readonly<Record<string, unknown>>,
  /** The account's custom product fields, already read by their type (readCustomFields); kept, not dropped. */
  custom: Readonly<Record<string, CustomValue | null>> = {},
): ProductRecord {
  const fields: Record<string, ProductValue | null> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(data)) {
    if (value === undefined || name === 'product_id') continue;
    if (Object.hasOwn(PRODUCT_FIELDS, name))
      fields[name] = value === '' ? null : (value as ProductValue | null);
    else if (Object.hasOwn(custom, name)) fields[name] = custom[name]!;
    else dropped.push(name);
  }
  const record: ProductRecord = { product_id: String(data.product_id), fields };
  if (dropped.length) record.dropped = dropped;
  return record;
}

/** The levels of a category, most general first. */
export function categoryPath(category: string): string[] {
  return category.split(CATEGORY_DELIMITER);
}

/** A product after an additive update: supplied fields replace the old values (no history), null removes. */
export function mergeProduct(
  current: Readonly<Record<string, ProductValue>>,
  update: Readonly<Record<string, ProductValue | null>>,
): Record<string, ProductValue> {
  const next: Record<string, ProductValue> = { ...current };
  for (const [name, value] of Object.entries(update)) {
    if (value === null) delete next[name];
    else next[name] = value;
  }
  return next;
}
