import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ValidateIf } from 'class-validator';
import { MAX_STRING } from '@cdp/contracts';
import { EVENT_DATA_FIELDS, isJunkIdentifierValue } from '@cdp/domain';
import { Obeys } from '../validation/constraints.js';

/*
 * The updates of `POST /v3/lists/subscriptions` (spec "Lists and subscriptions"): a subscription update
 * `{list_id, email, subscribed}` or a channel opt-in `{opted_in, email}`, each with further members that
 * are event fields (written to the update's list/subscribe event). The body is one update or an array of
 * them: SubscriptionsPipe tells the kinds apart by their members and checks each by its DTO.
 */

/** An address with something on either side of one `@` (the browser SDK asks for "email-like"). */
const EMAIL_LIKE = /^[^\s@]+@[^\s@]+$/;

const emailProblem = (email: unknown): string | undefined => {
  if (email === undefined || email === null) return 'is required';
  if (typeof email !== 'string') return 'must be a string';
  if (email.length > MAX_STRING) return `must be at most ${MAX_STRING} characters`;
  if (isJunkIdentifierValue(email) || !EMAIL_LIKE.test(email.trim())) return 'must be an email address';
  return undefined;
};

const trueOrFalse = (reason: string) => (value: unknown) =>
  value === undefined || value === null
    ? reason
    : typeof value === 'boolean'
      ? undefined
      : 'must be true or false';

/** Members of an update that are the update itself; the others are further fields. */
const UPDATE_MEMBERS = new Set(['list_id', 'email', 'subscribed', 'opted_in']);
/** Event fields a further field may not set: the event's own time, and what the update says. */
const NOT_FURTHER = new Set(['ts', 'order', 'list_id', 'subscribed']);

/** The kinds of event field a further field may be, with the rule each one obeys. */
const FURTHER_RULES = {
  string: {
    openapi: { type: 'string', maxLength: MAX_STRING },
    problem: (v: unknown) =>
      typeof v === 'string' && v.length <= MAX_STRING
        ? undefined
        : `must be a string of at most ${MAX_STRING} characters`,
  },
  integer: {
    openapi: { type: 'integer' },
    problem: (v: unknown) => (Number.isSafeInteger(v) ? undefined : 'must be an integer'),
  },
  boolean: {
    openapi: { type: 'boolean' },
    problem: (v: unknown) => (typeof v === 'boolean' ? undefined : 'must be true or false'),
  },
} as const;
type FurtherType = keyof typeof FURTHER_RULES;

/**
 * The event fields an update may carry as further members, typed as the event table says (other further
 * members are ignored, as undefined fields are everywhere).
 */
export const FURTHER_FIELDS: readonly { name: string; type: FurtherType }[] = Object.entries(
  EVENT_DATA_FIELDS,
).flatMap(([name, type]) =>
  !UPDATE_MEMBERS.has(name) && !NOT_FURTHER.has(name) && type in FURTHER_RULES
    ? [{ name, type: type as FurtherType }]
    : [],
);

/** The further fields as the event takes them. */
export interface FurtherFields {
  [field: string]: unknown;
}

// A constructor of a DTO class (the mixin below extends one).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type DtoClass<T = object> = new (...args: any[]) => T;

/**
 * An update of one kind: `email` and the further fields, then the kind's own members. class-validator
 * reports a class's own properties before those it inherits, so the shared members are declared on the
 * class built here, over the kind's: the invalids come email first, as they always did.
 */
function updateOf<Kind extends object>(kind: DtoClass<Kind>, name: string): DtoClass<Kind & UpdateMembers> {
  class Update extends (kind as DtoClass) {
    @ApiProperty({ type: 'string', format: 'email', maxLength: MAX_STRING })
    @Obeys('isEmail', emailProblem)
    email!: string;
  }
  for (const { name: field, type } of FURTHER_FIELDS) {
    const rule = FURTHER_RULES[type];
    ApiPropertyOptional({ ...rule.openapi, description: 'written to the list/subscribe event' })(
      Update.prototype,
      field,
    );
    ValidateIf((update: FurtherFields) => update[field] !== undefined && update[field] !== null)(
      Update.prototype,
      field,
    );
    Obeys(`isEventField_${field}`, rule.problem)(Update.prototype, field);
  }
  Object.defineProperty(Update, 'name', { value: name });
  return Update as DtoClass<Kind & UpdateMembers>;
}

interface UpdateMembers extends FurtherFields {
  email: string;
}

const LIST_ID = `must be a list id (a string of 1 to ${MAX_STRING} characters)`;

class ListUpdateMembers {
  @ApiProperty({ type: 'string', minLength: 1, maxLength: MAX_STRING })
  @Obeys('isListId', (v) =>
    v === undefined
      ? 'is required'
      : typeof v === 'string' && v.length > 0 && v.length <= MAX_STRING
        ? undefined
        : LIST_ID,
  )
  list_id!: string;

  @ApiProperty({ type: 'boolean' })
  @Obeys('isSubscribed', trueOrFalse('is required'))
  subscribed!: boolean;
}

class ChannelOptInMembers {
  @ApiProperty({ type: 'boolean', description: 'a change of svc_all, the channel opt-in' })
  @Obeys('isOptedIn', (v) => (typeof v === 'boolean' ? undefined : 'must be true or false'))
  opted_in!: boolean;
}

class ConflictingMembers {
  /** Never sent: both kinds' members at once, named together as the spec's envelope does. */
  @Obeys(
    'isOneKind',
    () => 'an update is either a subscription update (list_id, subscribed) or a channel opt-in (opted_in)',
    { context: { field: ['list_id', 'opted_in'] } },
  )
  readonly oneKind?: never;
}

/** `{list_id, email, subscribed}` and further event fields. */
export const ListSubscriptionDto = updateOf(ListUpdateMembers, 'ListSubscriptionDto');
export type ListSubscriptionDto = InstanceType<typeof ListSubscriptionDto>;

/** `{opted_in, email}` and further event fields. */
export const ChannelOptInDto = updateOf(ChannelOptInMembers, 'ChannelOptInDto');
export type ChannelOptInDto = InstanceType<typeof ChannelOptInDto>;

/** Both kinds at once: the email and further fields are checked, and the mix is refused. */
export const ConflictingUpdateDto = updateOf(ConflictingMembers, 'ConflictingUpdateDto');

export type SubscriptionUpdate = ListSubscriptionDto | ChannelOptInDto;

/** The DTO an update is checked by, told apart by its members (`undefined` counts as absent). */
export function updateKindOf(update: Record<string, unknown>): DtoClass {
  const isList = update.list_id !== undefined;
  const isChannel = update.opted_in !== undefined;
  if (isList && isChannel) return ConflictingUpdateDto;
  return isChannel ? ChannelOptInDto : ListSubscriptionDto;
}
