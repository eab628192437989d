import { nameFromParts, type Attributes } from '@cdp/domain';
import { REDACTED_ATTRIBUTES, REDACTED_WRITABLE, type ProfileSnapshot } from './profile-state.port.js';
import type { FieldTimes } from './field-order.js';

/**
 * What a redacted profile starts from: nothing personal, `opted_in` false — except that a profile
 * redacted before keeps the `opted_in` it was given since (an explicit channel opt-in): redacting it
 * again changes nothing, so a record of a pooled identifier does not undo that opt-in.
 */
export function redactedBase(current: ProfileSnapshot | undefined): Attributes {
  const kept = current?.redacted ? current.attributes[REDACTED_WRITABLE] : undefined;
  return kept === undefined ? { ...REDACTED_ATTRIBUTES } : { [REDACTED_WRITABLE]: kept };
}

/** A profile's values with when each field was last written (`FieldTimes`, field-order.ts). */
export interface TimedFields {
  attributes: Attributes;
  times: FieldTimes;
}

/**
 * The fields of a survivor after a customer merged into it is folded in, field by field in acceptance
 * order, as if both customers' updates had been applied to one profile: the field last written by the
 * later record wins (the higher time), an unset included (a later unset on the loser removes the
 * survivor's older value). A field with no time (written by an update no bus record orders, or stored
 * before times were kept) is older than any timed one; where neither side has a time, the survivor's
 * value wins and the loser's only fills a gap. Equal times keep the survivor's (deterministic; one
 * record writes one customer, so it does not happen between two live profiles).
 *
 * The derived `name` (applyProfileUpdate): when it follows first and last name on both sides, it is
 * derived again from the folded parts; a name given by a caller is folded like any field.
 * `cdp_apply` (redis-functions.ts) folds by the same rule.
 */
export function foldFields(survivor: TimedFields, loser: TimedFields): TimedFields {
  const attributes = { ...survivor.attributes };
  const times = { ...survivor.times };
  const nameFollows = followsParts(survivor.attributes) && followsParts(loser.attributes);
  for (const field of new Set([...Object.keys(loser.attributes), ...Object.keys(loser.times)])) {
    if (field === 'name' && nameFollows) continue;
    if (!loserWins(field, survivor, loser)) continue;
    const value = loser.attributes[field];
    if (value === undefined) delete attributes[field];
    else attributes[field] = value;
    const at = loser.times[field];
    if (at !== undefined) times[field] = at;
  }
  if (nameFollows) {
    const name = nameFromParts(attributes);
    if (name) attributes.name = name;
    else delete attributes.name;
  }
  return { attributes, times };
}

function loserWins(field: string, survivor: TimedFields, loser: TimedFields): boolean {
  const mine = survivor.times[field];
  const theirs = loser.times[field];
  if (theirs !== undefined) return mine === undefined || theirs > mine;
  return mine === undefined && survivor.attributes[field] === undefined;
}

/** Whether a profile's name is absent or exactly what its first and last name give. */
function followsParts(attributes: Attributes): boolean {
  return attributes.name === undefined || attributes.name === nameFromParts(attributes);
}

/**
 * A survivor's profile with the profiles of customers merged into it folded in, as `ProfileState.apply`
 * folds them (`foldFields`, in the order given); a redacted one redacts the survivor.
 * Undefined when none of them has a profile.
 */
export function foldedProfile(
  customerId: string,
  survivor: ProfileSnapshot | undefined,
  losers: readonly ProfileSnapshot[],
): ProfileSnapshot | undefined {
  if (losers.length === 0) return survivor;
  let folded: TimedFields = { attributes: survivor?.attributes ?? {}, times: survivor?.times ?? {} };
  let redacted = survivor?.redacted === true;
  for (const loser of losers) {
    folded = foldFields(folded, { attributes: loser.attributes, times: loser.times ?? {} });
    redacted ||= loser.redacted === true;
  }
  const version = survivor?.version ?? 0;
  const snapshot: ProfileSnapshot = redacted
    ? { customerId, version, attributes: redactedBase(survivor), redacted }
    : { customerId, version, attributes: folded.attributes };
  if (Object.keys(folded.times).length) snapshot.times = folded.times;
  return snapshot;
}
