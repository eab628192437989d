/** The spec's email rule (anything, `@`, anything, `.`, anything), without blanks. */
const EMAIL_LIKE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Options of `subscribe` and `unsubscribe` (spec "Lists and subscriptions", the browser SDK's note). */
export interface SubscribeOptions {
  list_id: string | string[];
  email: string;
  success?: () => void;
  error?: (error: Error) => void;
  [field: string]: unknown;
}

/** The list ids, or why the options are refused: list_id a non-empty string or array of them, email email-like. */
export function subscriptionProblem(options: SubscribeOptions | undefined): string | string[] {
  if (!options || typeof options !== 'object') return 'subscribe needs {list_id, email}';
  const ids = Array.isArray(options.list_id) ? options.list_id : [options.list_id];
  if (!ids.length || ids.some((id) => typeof id !== 'string' || !id.trim()))
    return 'list_id must be a non-empty string or an array of non-empty strings';
  if (typeof options.email !== 'string' || !EMAIL_LIKE.test(options.email.trim()))
    return 'email must be a non-empty email address';
  return ids;
}

export function isEmailLike(value: unknown): value is string {
  return typeof value === 'string' && EMAIL_LIKE.test(value.trim());
}
