import type { AttributeUpdate } from '@cdp/domain';

/**
 * When each field of a profile was last written, in acceptance order (`ProfileUpdate.at`). Kept for a
 * field even once an update unsets it, so a late update older than that unset cannot bring it back.
 */
export type FieldTimes = Record<string, number>;

/**
 * The part of an update that is newer than what the profile holds: a field last written by a record
 * accepted later (`times[field] > at`) keeps its value. Without `at` the whole update applies (a
 * change no bus record orders, e.g. a redaction).
 */
export function newerFields(
  update: AttributeUpdate,
  times: FieldTimes,
  at: number | undefined,
): AttributeUpdate {
  if (at === undefined) return update;
  const kept: AttributeUpdate = {};
  for (const [field, value] of Object.entries(update)) if (!(times[field]! > at)) kept[field] = value;
  return kept;
}

/** The times after an update's fields were written at `at`. */
export function stamped(times: FieldTimes, update: AttributeUpdate, at: number | undefined): FieldTimes {
  if (at === undefined) return times;
  const next = { ...times };
  for (const field of Object.keys(update)) next[field] = at;
  return next;
}
