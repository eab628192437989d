import { Injectable } from '@nestjs/common';
import { ApiError } from '@cdp/contracts';
import { CachedRecords, MetadataCacheClock, MetadataStore } from '@cdp/metadata';

/**
 * Schema modules (the original API's `/v3/schema/modules`): optional capabilities of an account. The
 * spec says custom objects exist "only in certain packages": a module is in an account's package or
 * not (the operator decides, admin API), and an account enables the modules of its package.
 */
export const SCHEMA_MODULES = {
  /** Creating objects (`POST /v3/schema/objects`) and writing their records (`POST /v3/objects/{object}`). */
  custom_objects: { enabledByDefault: true },
} as const;
export type SchemaModuleName = keyof typeof SCHEMA_MODULES;
export const SCHEMA_MODULE_NAMES = Object.keys(SCHEMA_MODULES) as SchemaModuleName[];

/** What the operator set of a module for an account: enabled, in the package but off, or not in it. */
export type ModuleState = 'enabled' | 'available' | 'unavailable';

/** The stored record: only what differs from the defaults (every module in the package, some on). */
type ModulesDoc = Partial<Record<SchemaModuleName, ModuleState>>;

const BUCKET = 'schema-modules';
/** Module changes reach every API replica within this long (as schema changes do). */
export const MODULES_CACHE_MS = 2_000;

export function isSchemaModule(name: unknown): name is SchemaModuleName {
  return typeof name === 'string' && Object.hasOwn(SCHEMA_MODULES, name);
}

@Injectable()
export class AccountModules {
  private readonly records: CachedRecords<ModulesDoc>;

  constructor(metadata: MetadataStore, @MetadataCacheClock() now?: () => number) {
    this.records = new CachedRecords(metadata, BUCKET, {
      ttlMs: MODULES_CACHE_MS,
      view: (found) => found?.value ?? {},
      now,
    });
  }

  /** Every module's state for the account, defaults included. */
  async states(account: string, fresh = false): Promise<Record<SchemaModuleName, ModuleState>> {
    const doc = await this.read(account, fresh);
    return Object.fromEntries(
      SCHEMA_MODULE_NAMES.map((m) => [
        m,
        doc[m] ?? (SCHEMA_MODULES[m].enabledByDefault ? 'enabled' : 'available'),
      ]),
    ) as Record<SchemaModuleName, ModuleState>;
  }

  async enabled(account: string, fresh = false): Promise<SchemaModuleName[]> {
    const states = await this.states(account, fresh);
    return SCHEMA_MODULE_NAMES.filter((m) => states[m] === 'enabled');
  }

  /** Refuses (403) a route of a module the account has not enabled. */
  async require(account: string, module: SchemaModuleName): Promise<void> {
    if ((await this.states(account))[module] !== 'enabled')
      throw ApiError.forbidden(
        `the ${module} module is not enabled for this account (POST /v3/schema/modules enables a module of its package)`,
      );
  }

  /** The account enables a module of its package (`POST /v3/schema/modules`). */
  async enable(account: string, module: unknown): Promise<SchemaModuleName[]> {
    if (!isSchemaModule(module))
      throw ApiError.invalid([
        { field: 'module', reason: `is not a module; one of: ${SCHEMA_MODULE_NAMES.join(', ')}` },
      ]);
    const state = (await this.states(account, true))[module];
    if (state === 'enabled') throw ApiError.invalid([{ field: 'module', reason: 'already enabled' }]);
    if (state === 'unavailable')
      throw ApiError.forbidden(`the ${module} module is not in this account's package; ask the operator`);
    await this.change(account, { [module]: 'enabled' });
    return this.enabled(account, true);
  }

  /** The operator sets modules' states for an account (admin API). */
  async change(account: string, patch: ModulesDoc): Promise<Record<SchemaModuleName, ModuleState>> {
    await this.records.update(account, (found) => ({ ...(found?.value ?? {}), ...patch }));
    return this.states(account);
  }

  private async read(account: string, fresh: boolean): Promise<ModulesDoc> {
    try {
      return await this.records.cached(account, fresh);
    } catch (err) {
      throw ApiError.unavailable(
        `the account's modules cannot be read right now: ${err instanceof Error ? err.message : String(err)}`,
        1,
      );
    }
  }
}
