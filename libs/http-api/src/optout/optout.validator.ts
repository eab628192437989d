import { ApiError, MAX_STRING, type Invalid } from '@cdp/contracts';
import { isJunkIdentifierValue, normalizeIdentifierValue, type Identifier } from '@cdp/domain';

/** Spec "Data types": an email is anything, `@`, anything, `.`, anything. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface OptOutRequest {
  requester: string;
  /** The email and vuid sent, normalized as the identity index keeps them. */
  identifiers: Identifier[];
  /** Matched exactly against the stored value (spec "Compliance opt-out"), so never normalized. */
  phone?: string;
}

/**
 * Reads `POST /v3/optout` (spec "Compliance opt-out"): `requester` is required, and one of email,
 * phone or vuid (spec "Errors": 400 when requester is empty or none of them is supplied). Every
 * problem is reported at once.
 */
export function parseOptOut(body: unknown): OptOutRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw ApiError.invalid([{ field: 'body', reason: 'must be an object' }]);
  const b = body as Record<string, unknown>;
  const invalids: Invalid[] = [];
  const text = (field: string): string | undefined => {
    const value = b[field];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') invalids.push({ field, reason: 'must be a string' });
    else if (value.trim().length === 0) invalids.push({ field, reason: 'must not be empty' });
    else if (value.length > MAX_STRING)
      invalids.push({ field, reason: `must be at most ${MAX_STRING} characters` });
    else return value;
    return undefined;
  };
  const requester = text('requester');
  if (requester === undefined && (b.requester === undefined || b.requester === null))
    invalids.push({ field: 'requester', reason: 'is required' });
  const email = text('email');
  if (email !== undefined && (isJunkIdentifierValue(email) || !EMAIL.test(email.trim())))
    invalids.push({ field: 'email', reason: 'must be an email address' });
  const phone = text('phone');
  const vuid = text('vuid');
  if (vuid !== undefined && isJunkIdentifierValue(vuid))
    invalids.push({ field: 'vuid', reason: 'must be a cookie id' });
  if (['email', 'phone', 'vuid'].every((f) => b[f] === undefined || b[f] === null))
    invalids.push({ field: ['email', 'phone', 'vuid'], reason: 'one of email, phone or vuid is required' });
  if (invalids.length) throw ApiError.invalid(invalids);

  const identifiers: Identifier[] = [];
  if (email !== undefined)
    identifiers.push({ kind: 'email', value: normalizeIdentifierValue('email', email) });
  if (vuid !== undefined) identifiers.push({ kind: 'vuid', value: normalizeIdentifierValue('vuid', vuid) });
  return phone === undefined
    ? { requester: requester!, identifiers }
    : { requester: requester!, identifiers, phone };
}
