import { CATEGORY_DELIMITER } from '@cdp/domain';
import type { RecommendationRules } from './recommendation-rules.shape.js';

export type { RecommendationRules } from './recommendation-rules.shape.js';

export interface RuleProblem {
  field: string;
  reason: string;
}

/** Every rule an operator may set (the admin API refuses other properties). */
export const RULE_NAMES = [
  'exclude_categories',
  'require_image',
  'require_price',
  'min_price',
  'max_price',
  'require_true',
] as const satisfies readonly (keyof RecommendationRules)[];

/** How many categories `exclude_categories` may list. */
export const MAX_EXCLUDED_CATEGORIES = 1000;

/**
 * Checks a rules document whose shape the admin API has checked (its DTO: types, lengths,
 * `min_price` ≤ `max_price`) against what needs the account: `booleanFields` are its custom boolean
 * product fields, the only ones `require_true` may name. Returns the problems, or the rules as
 * stored: without the ones that filter nothing (false flags, nulls, no required field).
 */
export function checkRules(
  body: RecommendationRules,
  booleanFields: ReadonlySet<string>,
): { rules: RecommendationRules } | { problems: RuleProblem[] } {
  const rules: RecommendationRules = {};
  if (body.exclude_categories) rules.exclude_categories = body.exclude_categories;
  if (body.require_image) rules.require_image = true;
  if (body.require_price) rules.require_price = true;
  if (typeof body.min_price === 'number') rules.min_price = body.min_price;
  if (typeof body.max_price === 'number') rules.max_price = body.max_price;
  const required = body.require_true ?? [];
  const unknown = required.filter((f) => !booleanFields.has(f));
  if (unknown.length) {
    return {
      problems: [
        { field: 'require_true', reason: `names no custom boolean product field: ${unknown.join(', ')}` },
      ],
    };
  }
  if (required.length) rules.require_true = [...new Set(required)];
  return { rules };
}

/** Whether a product record passes the rules (applied to every answer, whichever kind). */
export function passesRules(rules: RecommendationRules, product: Readonly<Record<string, unknown>>): boolean {
  const category = typeof product.category === 'string' ? product.category : '';
  if (rules.exclude_categories?.some((c) => category === c || category.startsWith(c + CATEGORY_DELIMITER)))
    return false;
  if (rules.require_image && !(typeof product.image_url === 'string' && product.image_url !== ''))
    return false;
  const price = product.price === null || product.price === undefined ? undefined : Number(product.price);
  if (rules.require_price && price === undefined) return false;
  if (rules.min_price !== undefined && !(price !== undefined && price >= rules.min_price)) return false;
  if (rules.max_price !== undefined && !(price !== undefined && price <= rules.max_price)) return false;
  return (rules.require_true ?? []).every((field) => product[field] === true || product[field] === 1);
}
