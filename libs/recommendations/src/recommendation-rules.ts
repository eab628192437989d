import { CATEGORY_DELIMITER } from '@cdp/domain';

/**
 * The default filtering rules of an account's recommendations (spec "Recommendations": "configured by
 * the operator of the account"), applied to every answer. Absent rules filter nothing.
 */
export interface RecommendationRules {
  /** Categories left out, each with everything beneath it (`Electronics > Computers` leaves out laptops too). */
  exclude_categories?: string[];
  /** Leave out products without an `image_url`. */
  require_image?: boolean;
  /** Leave out products without a `price`. */
  require_price?: boolean;
  /** Only products priced at least this (a product without a price is left out when a bound is set). */
  min_price?: number;
  /** Only products priced at most this. */
  max_price?: number;
  /** Custom boolean product fields that must be true (e.g. `in_stock`). */
  require_true?: string[];
}

export interface RuleProblem {
  field: string;
  reason: string;
}

const RULE_NAMES = [
  'exclude_categories',
  'require_image',
  'require_price',
  'min_price',
  'max_price',
  'require_true',
] as const;

/**
 * Checks a rules document an operator sends. `booleanFields` are the account's custom boolean product
 * fields (the only ones `require_true` may name). Returns the problems, or the rules as stored.
 */
export function checkRules(
  input: unknown,
  booleanFields: ReadonlySet<string>,
): { rules: RecommendationRules } | { problems: RuleProblem[] } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { problems: [{ field: 'body', reason: 'must be an object of rules' }] };
  }
  const body = input as Record<string, unknown>;
  const problems: RuleProblem[] = [];
  const rules: RecommendationRules = {};
  for (const key of Object.keys(body)) {
    if (!(RULE_NAMES as readonly string[]).includes(key)) {
      problems.push({ field: key, reason: `is not a rule (${RULE_NAMES.join(', ')})` });
    }
  }
  const categories = body.exclude_categories;
  if (categories !== undefined && categories !== null) {
    if (
      !Array.isArray(categories) ||
      categories.length > 1000 ||
      !categories.every((c) => typeof c === 'string' && c.trim() !== '' && c.length <= 1024)
    ) {
      problems.push({
        field: 'exclude_categories',
        reason: `must be an array of at most 1000 non-empty categories (levels joined by "${CATEGORY_DELIMITER}")`,
      });
    } else rules.exclude_categories = categories as string[];
  }
  for (const flag of ['require_image', 'require_price'] as const) {
    const value = body[flag];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'boolean') problems.push({ field: flag, reason: 'must be a boolean' });
    else if (value) rules[flag] = true;
  }
  for (const bound of ['min_price', 'max_price'] as const) {
    const value = body[bound];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      problems.push({ field: bound, reason: 'must be a number' });
    } else rules[bound] = value;
  }
  if (rules.min_price !== undefined && rules.max_price !== undefined && rules.min_price > rules.max_price) {
    problems.push({ field: 'max_price', reason: 'must not be below min_price' });
  }
  const required = body.require_true;
  if (required !== undefined && required !== null) {
    if (!Array.isArray(required) || !required.every((f) => typeof f === 'string')) {
      problems.push({ field: 'require_true', reason: 'must be an array of custom boolean product fields' });
    } else {
      const unknown = required.filter((f) => !booleanFields.has(f));
      if (unknown.length) {
        problems.push({
          field: 'require_true',
          reason: `names no custom boolean product field: ${unknown.join(', ')}`,
        });
      } else if (required.length) rules.require_true = [...new Set(required)];
    }
  }
  return problems.length ? { problems } : { rules };
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
