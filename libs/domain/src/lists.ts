/**
 * Lists and consent (spec "List and subscription resources", "Consent and subscription").
 *
 * The legacy list `svc_all` stands for global opt-in: adding a customer to it equals `opted_in: true`,
 * and removing one equals a global opt-out.
 */
export const SVC_ALL = 'svc_all';

/** The largest number of lists an account may have; all of them are kept in one metadata record. */
export const MAX_LISTS = 1000;

/**
 * `list_id` is derived from the name (spec/NOTES.md "Lists"): lower-cased, every run of characters
 * that are not letters or digits replaced by `_`.
 */
export function listIdFromName(name: string): string {
  return name.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '_');
}

/** Two list names are the same name when they differ only in case or surrounding blanks. */
export function listNameKey(name: string): string {
  return name.trim().toLowerCase();
}

/** A consent change as it travels from the API to the processor. */
export interface SubscriptionRecord {
  /** The identifiers the change was sent with (an email), normalized as for any record. */
  identifiers: Record<string, string | string[]>;
  /** The list whose membership changes; `svc_all` for a channel opt-in (global opt-in). */
  list_id: string;
  subscribed: boolean;
  /** True when it was sent as a channel opt-in (`{opted_in, email}`) rather than a list update. */
  channel_opt_in: boolean;
  /**
   * Event fields sent beside the update (the browser SDK's "further fields": its page fields), written to
   * the update's `list`/`subscribe` event; `channel` among them when sent.
   */
  event_data?: Record<string, string | number | boolean>;
}
