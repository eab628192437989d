import type { Attributes } from '@cdp/domain';
import { REDACTED_ATTRIBUTES, REDACTED_WRITABLE, type ProfileSnapshot } from './profile-state.port.js';

/**
 * What a redacted profile starts from: nothing personal, `opted_in` false — except that a profile
 * redacted before keeps the `opted_in` it was given since (an explicit channel opt-in): redacting it
 * again changes nothing, so a record of a pooled identifier does not undo that opt-in.
 */
export function redactedBase(current: ProfileSnapshot | undefined): Attributes {
  const kept = current?.redacted ? current.attributes[REDACTED_WRITABLE] : undefined;
  return kept === undefined ? { ...REDACTED_ATTRIBUTES } : { [REDACTED_WRITABLE]: kept };
}

/**
 * A survivor's profile with the profiles of customers merged into it folded in, as `ProfileState.apply`
 * folds them: the survivor's values win, then the earlier loser's; a redacted one redacts the survivor.
 * Undefined when none of them has a profile.
 */
export function foldedProfile(
  customerId: string,
  survivor: ProfileSnapshot | undefined,
  losers: readonly ProfileSnapshot[],
): ProfileSnapshot | undefined {
  if (losers.length === 0) return survivor;
  let attributes: Attributes = survivor?.attributes ?? {};
  let redacted = survivor?.redacted === true;
  for (const loser of losers) {
    attributes = { ...loser.attributes, ...attributes };
    redacted ||= loser.redacted === true;
  }
  const version = survivor?.version ?? 0;
  return redacted
    ? { customerId, version, attributes: redactedBase(survivor), redacted }
    : { customerId, version, attributes };
}
