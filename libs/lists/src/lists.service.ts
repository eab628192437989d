import { Injectable } from '@nestjs/common';
import { ApiError } from '@cdp/contracts';
import { listIdFromName, listNameKey, MAX_LISTS, SVC_ALL } from '@cdp/domain';
import { MetadataStore, updateWithRetry } from '@cdp/metadata';

/** A list as the API shows it (spec "List and subscription resources"). */
export interface List {
  list_id: string;
  name: string;
  created_at: string;
}

interface AccountLists {
  lists: List[];
}

/** Metadata bucket of lists: one record per account holding all its lists. */
const BUCKET = 'lists';
/** Names are strings like any other (spec "Limits": at most 1024 characters). */
const MAX_NAME = 1024;
const UNIQUE = 'list name must be unique';

/**
 * An account's lists. All of them live in one metadata record, changed by compare-and-set: a name
 * and an id are claimed in the same atomic write, so two API replicas creating or renaming at once
 * can never both win, and a crash can leave no half-claimed name behind.
 *
 * The legacy list `svc_all` (global opt-in) always exists; it is never stored and cannot be renamed.
 */
@Injectable()
export class ListsService {
  constructor(private readonly metadata: MetadataStore) {}

  /** Every list of the account, `svc_all` first (created with the account), then by creation. */
  async all(account: string, accountCreatedAt: string): Promise<List[]> {
    const stored = (await this.metadata.get<AccountLists>(BUCKET, account))?.value.lists ?? [];
    return [{ list_id: SVC_ALL, name: SVC_ALL, created_at: accountCreatedAt }, ...stored];
  }

  /** The ids among `ids` that name no list of the account (`svc_all` always exists). */
  async unknown(account: string, ids: readonly string[]): Promise<string[]> {
    const stored = (await this.metadata.get<AccountLists>(BUCKET, account))?.value.lists ?? [];
    const known = new Set([SVC_ALL, ...stored.map((l) => l.list_id)]);
    return [...new Set(ids)].filter((id) => !known.has(id));
  }

  async create(account: string, rawName: unknown): Promise<List> {
    const name = checkName(rawName);
    return this.change(account, (lists) => {
      if (lists.length >= MAX_LISTS) {
        throw ApiError.invalid([{ field: 'name', reason: `an account has at most ${MAX_LISTS} lists` }]);
      }
      assertUnused(lists, name);
      const list: List = {
        list_id: freeId(lists, listIdFromName(name)),
        name,
        created_at: new Date().toISOString(),
      };
      lists.push(list);
      return list;
    });
  }

  async rename(account: string, listId: string, rawName: unknown): Promise<List> {
    if (listId === SVC_ALL) {
      throw ApiError.invalid([
        { field: 'list_id', reason: `${SVC_ALL} stands for global opt-in and cannot be renamed` },
      ]);
    }
    const name = checkName(rawName);
    return this.change(account, (lists) => {
      const list = lists.find((l) => l.list_id === listId);
      if (!list) throw ApiError.notFound('list not found');
      assertUnused(
        lists.filter((l) => l !== list),
        name,
      );
      // The id stays: subscriptions and events refer to the list by it.
      list.name = name;
      return list;
    });
  }

  private async change(account: string, mutate: (lists: List[]) => List): Promise<List> {
    // Another replica changing the account's lists meanwhile has this decided again on what it wrote.
    let result!: List;
    await updateWithRetry<AccountLists>(this.metadata, BUCKET, account, (found) => {
      const lists = found?.value.lists ?? [];
      result = mutate(lists);
      return { lists };
    });
    return result;
  }
}

function checkName(raw: unknown): string {
  if (typeof raw !== 'string')
    throw ApiError.invalid([{ field: 'name', reason: 'is required and must be a string' }]);
  const name = raw.trim();
  if (name.length === 0) throw ApiError.invalid([{ field: 'name', reason: 'must not be blank' }]);
  if (name.length > MAX_NAME) {
    throw ApiError.invalid([{ field: 'name', reason: `must be at most ${MAX_NAME} characters` }]);
  }
  if (!/[\p{L}\p{N}]/u.test(name)) {
    throw ApiError.invalid([
      { field: 'name', reason: 'must contain a letter or a digit (the list id is made of them)' },
    ]);
  }
  return name;
}

/** Names are unique per account, ignoring case (spec "Errors": "list name must be unique"). */
function assertUnused(lists: readonly List[], name: string): void {
  const key = listNameKey(name);
  if (key === SVC_ALL || lists.some((l) => listNameKey(l.name) === key)) {
    throw ApiError.invalid([{ field: 'name', reason: UNIQUE }]);
  }
}

/**
 * The derived id, or `<id>_2`, `<id>_3`… when a list with another name holds it (after a rename, or
 * for names such as `a-b` and `a b` that derive the same id).
 */
function freeId(lists: readonly List[], base: string): string {
  const taken = new Set([SVC_ALL, ...lists.map((l) => l.list_id)]);
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}_${n}`)) return `${base}_${n}`;
}
