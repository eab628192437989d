import { isIP } from 'node:net';
import { basename, resolve } from 'node:path';

/**
 * Which driver each port gets. Parsed once at boot; an unknown name fails the boot (no silent fallback).
 * `log`: the bus over a durable, fsync'd log in the data dir, read by this process only.
 */
export const BUS_DRIVERS = ['log', 'nats'] as const;
export const IDENTITY_DRIVERS = ['memory', 'redis'] as const;
export const STORE_DRIVERS = ['chdb', 'clickhouse'] as const;
export const METADATA_DRIVERS = ['file', 'nats'] as const;
/** The rate limiter, the order state, consent and identifiers: in this process, or shared in Redis. */
export const STATE_DRIVERS = ['memory', 'redis'] as const;
/** `Idempotency-Key` answers: a durable file in the data dir, or shared in Redis. */
export const IDEMPOTENCY_DRIVERS = ['file', 'redis'] as const;

export type BusDriver = (typeof BUS_DRIVERS)[number];
export type IdentityDriver = (typeof IDENTITY_DRIVERS)[number];
export const IDENTITY_SHARDINGS = ['auto', 'account', 'shards'] as const;
export type IdentitySharding = (typeof IDENTITY_SHARDINGS)[number];
export type StoreDriver = (typeof STORE_DRIVERS)[number];
export type MetadataDriver = (typeof METADATA_DRIVERS)[number];
export type StateDriver = (typeof STATE_DRIVERS)[number];
export type IdempotencyDriver = (typeof IDEMPOTENCY_DRIVERS)[number];

/**
 * Driver names replaced by one that says what runs: still accepted for one release, each with a warning
 * at boot (`AppConfig.deprecations`). To be removed in the release after.
 */
const RENAMED_DRIVERS: Record<string, Record<string, string>> = {
  CDP_BUS: { memory: 'log' },
};

export const BUCKET_DRIVERS = ['local', 's3'] as const;
export type BucketDriver = (typeof BUCKET_DRIVERS)[number];

/** `auto`: human lines on a terminal, JSON lines otherwise (a pipe, a file, a log collector). */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface S3Settings {
  endpoint: string | undefined;
  region: string;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  /** Path-style addressing (`endpoint/bucket/key`), as MinIO-like servers want. */
  forcePathStyle: boolean;
  buckets: BucketDirs;
  /** Server-side encryption asked for every object the platform writes: `AES256`, `aws:kms` or none. */
  sse: 'AES256' | 'aws:kms' | undefined;
  kmsKeyId: string | undefined;
}

export interface BucketDirs {
  incoming: string;
  scratch: string;
  export: string;
}

export interface AppConfig {
  port: number;
  host: string;
  dataDir: string;
  adminToken: string | undefined;
  bus: BusDriver;
  /** The identity index and hot profiles. The four ports below follow it unless set on their own. */
  identity: IdentityDriver;
  /**
   * How the Redis identity index lays out an account: `account`, all on the account's hash tag (one
   * primary); `shards`, over its 256 shard tags (ShardedIdentityIndex).
   */
  identitySharding: IdentitySharding;
  /** `CDP_RATE_LIMITS`: per-account request limits. */
  rateLimiter: StateDriver;
  /** `CDP_IDEMPOTENCY`: the answers remembered for `Idempotency-Key`. */
  idempotencyStore: IdempotencyDriver;
  /** `CDP_ORDERS`: the orders' hot state. */
  orderState: StateDriver;
  /** `CDP_CONSENT`: consent and identifier state. */
  consentState: StateDriver;
  store: StoreDriver;
  /** Accounts, keys and other metadata: a file in the data dir, or JetStream key-value buckets. */
  metadata: MetadataDriver;
  /** `NATS_URL`: the seed servers (comma separated); the client learns the rest of the cluster from them. */
  natsServers: string[];
  /** One Redis server, or a comma-separated seed list of a Redis Cluster (found out at connect), or the sentinels. */
  redisUrl: string;
  /** `REDIS_SENTINEL_NAME`: the primary's name in Sentinel; set, `REDIS_URL` lists the sentinels. */
  redisSentinelName: string | undefined;
  /** An order's hot state (Redis) expires this long after its last change (CDP_ORDER_RETENTION_DAYS). */
  orderRetentionMs: number;
  /**
   * `named` tells whether CLICKHOUSE_URL was set (the default points at a local server); `url` may list
   * several hosts, comma-separated. `cluster` (CLICKHOUSE_CLUSTER): the cluster of the servers' config
   * the store creates its tables on (Replicated tables under Distributed ones); unset, one server.
   */
  clickhouse: { url: string; user: string; password: string; named: boolean; cluster?: string };
  /** Names of this deployment's streams (`<prefix>_INGEST`) and KV buckets (`<prefix>_accounts`). */
  natsPrefix: string;
  /**
   * JetStream: replicas of the streams and buckets (`CDP_NATS_REPLICAS`). Unset: min(3, the servers of
   * the JetStream cluster), found at boot — 1 on a single server.
   */
  natsReplicas: number | undefined;
  /** JetStream: largest size of the ingest stream before publishes are refused (503). */
  natsStreamMaxBytes: number;
  /** JetStream: a crashed processor's unacknowledged messages are delivered again after this long. */
  natsAckWaitMs: number;
  buckets: BucketDirs;
  bootstrap: { publicKey: string; privateKey: string } | undefined;
  /**
   * Whether the API role creates the first account when there is none (`CDP_CREATE_FIRST_ACCOUNT`): the
   * all-in-one process always does; of scaled-out API replicas, only one may (`npm run start:scaled`).
   */
  createFirstAccount: boolean;
  logLevel: string;
  logFormat: LogFormat;
  /** Largest request body after gzip decompression (spec/NOTES.md: 8 MiB, 413 beyond). */
  bodyLimitBytes: number;
  /** Records the in-process bus may hold unprocessed before the API answers 503. */
  busMaxPendingBytes: number;
  /**
   * Worker threads that read, validate and encode the bodies of `POST /v3/events` off the main thread
   * (`CDP_INGEST_WORKERS`; 0: on the main thread).
   */
  ingestWorkers: number;
  /** Export jobs: rows per file (a page read from the store), worker lease and poll, DuckDB memory. */
  exports: { rowsPerFile: number; leaseMs: number; pollMs: number; memoryLimitMb: number; threads: number };
  /**
   * `Idempotency-Key`: how long a durable answer is remembered (`CDP_IDEMPOTENCY_TTL_SECONDS`, 24 h), and
   * how long a request holds its key before another attempt may take over (`CDP_IDEMPOTENCY_LEASE_SECONDS`).
   */
  idempotency: { ttlMs: number; leaseMs: number };
  /**
   * Bulk-file loader: how often the incoming bucket is looked at, how long a file's claim lasts without
   * renewal before another loader takes the file over, and records per bus message.
   */
  loader: { pollMs: number; leaseMs: number; recordsPerMessage: number };
  /**
   * How far V8 lets the heap grow past what a full collection left live before the next one, in percent
   * (`CDP_HEAP_GROWING_PERCENT`; 0: V8's own choice, up to about 4×). Bulk loads and ingest make bus
   * messages that live a second or two, long enough to reach the old generation: with V8's choice the
   * process carried several times its live data in garbage (docs/api-notes.md "Bulk files").
   */
  heapGrowingPercent: number;
  /**
   * Where the buckets live: `local` directories (the embedded default), or an S3-compatible service
   * (`s3`: endpoint, region, credentials, one bucket name each, server-side encryption of what we write).
   */
  bucketStore: BucketDriver;
  s3: S3Settings;
  /** Signs upload URLs served by the API on local directories (`CDP_UPLOAD_SIGNING_KEY`). */
  uploads: { signingKey: string; expiresSeconds: number; publicUrl: string | undefined };
  /**
   * The account console (`/console`): the HMAC secret of its session cookies (`CDP_CONSOLE_SECRET`; random
   * per process when unset, so replicas behind one address need it set), their lifetime, where the built
   * page is, and how many records per second the event inspector shows before it samples.
   */
  console: { secret: string | undefined; sessionTtlMs: number; assetsDir: string; inspectorBound: number };
  /**
   * Proxies whose `X-Forwarded-For` is believed (`CDP_TRUSTED_PROXIES`: addresses or CIDR ranges, comma
   * separated). The client address of a request (an event's `ip`) is the nearest address not in this list.
   */
  trustedProxies: string[];
  /** Test hooks only (`CDP_TEST_FAULTS`, @cdp/faults): where the write path fails or dies on purpose. */
  testFaults: string | undefined;
  /**
   * Email unsubscribe links (`POST /v3/lists/unsubscribe-links`): the HMAC secret they are signed with
   * (`CDP_UNSUBSCRIBE_SECRET`; unset: one generated once and kept in the metadata store, shared by every
   * replica), how long a link works, and the public base URL the links point at (unset: the host the
   * creating request was sent to).
   */
  unsubscribeLinks: { secret: string | undefined; ttlMs: number; baseUrl: string | undefined };
  /** One line per old name still in use (a renamed driver), for the boot to log as a warning. */
  deprecations: string[];
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function oneOf<T extends string>(
  env: Env,
  name: string,
  allowed: readonly T[],
  fallback: T,
  deprecations: string[] = [],
): T {
  let raw = env[name];
  const renamed = raw === undefined ? undefined : RENAMED_DRIVERS[name]?.[raw];
  if (renamed !== undefined) {
    deprecations.push(`${name}=${raw} is deprecated: use ${name}=${renamed} (the same driver, renamed)`);
    raw = renamed;
  }
  if (raw === undefined || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(`${name}=${raw} is not a known driver (expected one of: ${allowed.join(', ')})`);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** pino throws deep inside its setup on an unknown level: say which setting is wrong instead. */
function logLevel(raw: string | undefined): string {
  if (raw === undefined || raw === '') return 'info';
  if (LOG_LEVELS.includes(raw)) return raw;
  throw new ConfigError(`LOG_LEVEL=${raw} is not a log level (expected one of: ${LOG_LEVELS.join(', ')})`);
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name}=${raw} must be an integer between ${min} and ${max}`);
  }
  return value;
}

/** Reads the environment once. This is the only place in the code base that reads process.env. */
export function loadConfig(env: Env = process.env): AppConfig {
  const dataDir = resolve(env.CDP_DATA_DIR || './data');
  const deprecations: string[] = [];
  const bus = oneOf(env, 'CDP_BUS', BUS_DRIVERS, 'log', deprecations);
  const identity = oneOf(env, 'CDP_IDENTITY', IDENTITY_DRIVERS, 'memory');
  // Each port that keeps state beside the identity index follows CDP_IDENTITY unless set on its own.
  const shared = identity === 'redis';
  const publicKey = env.CDP_BOOTSTRAP_PUBLIC_KEY || undefined;
  const privateKey = env.CDP_BOOTSTRAP_PRIVATE_KEY || undefined;
  if ((publicKey === undefined) !== (privateKey === undefined)) {
    throw new ConfigError('CDP_BOOTSTRAP_PUBLIC_KEY and CDP_BOOTSTRAP_PRIVATE_KEY must be set together');
  }
  if (env.CLICKHOUSE_CLUSTER && env.CDP_STORE !== 'clickhouse')
    throw new ConfigError(
      'CLICKHOUSE_CLUSTER needs CDP_STORE=clickhouse (chDB is one process, not a cluster)',
    );
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: env.HOST || '0.0.0.0',
    dataDir,
    adminToken: env.CDP_ADMIN_TOKEN || undefined,
    bus,
    identity,
    identitySharding: oneOf(env, 'CDP_IDENTITY_SHARDING', IDENTITY_SHARDINGS, 'auto'),
    rateLimiter: oneOf(env, 'CDP_RATE_LIMITS', STATE_DRIVERS, shared ? 'redis' : 'memory'),
    idempotencyStore: oneOf(env, 'CDP_IDEMPOTENCY', IDEMPOTENCY_DRIVERS, shared ? 'redis' : 'file'),
    orderState: oneOf(env, 'CDP_ORDERS', STATE_DRIVERS, shared ? 'redis' : 'memory'),
    consentState: oneOf(env, 'CDP_CONSENT', STATE_DRIVERS, shared ? 'redis' : 'memory'),
    store: oneOf(env, 'CDP_STORE', STORE_DRIVERS, 'chdb'),
    // Metadata follows the bus unless told otherwise: with NATS, every replica shares JetStream KV.
    metadata: oneOf(env, 'CDP_METADATA', METADATA_DRIVERS, bus === 'nats' ? 'nats' : 'file'),
    natsServers: seedList(env, 'NATS_URL', 'nats://127.0.0.1:4222'),
    redisUrl: env.REDIS_URL || 'redis://127.0.0.1:6379',
    redisSentinelName: env.REDIS_SENTINEL_NAME || undefined,
    orderRetentionMs: integer(env, 'CDP_ORDER_RETENTION_DAYS', 400, 1, 36_500) * 86_400_000,
    clickhouse: {
      url: env.CLICKHOUSE_URL || 'http://127.0.0.1:8123',
      user: env.CLICKHOUSE_USER || 'default',
      password: env.CLICKHOUSE_PASSWORD || '',
      named: Boolean(env.CLICKHOUSE_URL),
      ...(env.CLICKHOUSE_CLUSTER ? { cluster: clusterName(env.CLICKHOUSE_CLUSTER) } : {}),
    },
    natsPrefix: natsPrefix(env.CDP_NATS_PREFIX || 'CDP'),
    natsReplicas: env.CDP_NATS_REPLICAS ? integer(env, 'CDP_NATS_REPLICAS', 1, 1, 5) : undefined,
    natsStreamMaxBytes: integer(env, 'CDP_NATS_STREAM_MAX_MB', 4096, 1, 1 << 24) * 1024 * 1024,
    natsAckWaitMs: integer(env, 'CDP_NATS_ACK_WAIT_MS', 10_000, 1000, 600_000),
    buckets: {
      incoming: resolve(dataDir, env.CDP_BUCKET_INCOMING || 'buckets/incoming'),
      scratch: resolve(dataDir, env.CDP_BUCKET_SCRATCH || 'buckets/scratch'),
      export: resolve(dataDir, env.CDP_BUCKET_EXPORT || 'buckets/export'),
    },
    bootstrap: publicKey && privateKey ? { publicKey, privateKey } : undefined,
    createFirstAccount: env.CDP_CREATE_FIRST_ACCOUNT === 'true',
    logLevel: logLevel(env.LOG_LEVEL),
    logFormat: oneOf(env, 'LOG_FORMAT', LOG_FORMATS, 'auto'),
    bodyLimitBytes: 8 * 1024 * 1024,
    busMaxPendingBytes: integer(env, 'CDP_BUS_MAX_PENDING_MB', 512, 1, 1 << 20) * 1024 * 1024,
    ingestWorkers: integer(env, 'CDP_INGEST_WORKERS', 1, 0, 16),
    exports: {
      rowsPerFile: integer(env, 'CDP_EXPORT_ROWS_PER_FILE', 1_000_000, 1, 1 << 30),
      leaseMs: integer(env, 'CDP_EXPORT_LEASE_SECONDS', 30, 1, 86_400) * 1000,
      pollMs: integer(env, 'CDP_EXPORT_POLL_MS', 500, 10, 600_000),
      memoryLimitMb: integer(env, 'CDP_EXPORT_MEMORY_MB', 512, 64, 1 << 20),
      threads: integer(env, 'CDP_EXPORT_THREADS', 2, 1, 256),
    },
    idempotency: {
      ttlMs: integer(env, 'CDP_IDEMPOTENCY_TTL_SECONDS', 86_400, 1, 30 * 86_400) * 1000,
      // Well inside JetStream's two-minute duplicate window: a takeover's publish is still deduplicated.
      leaseMs: integer(env, 'CDP_IDEMPOTENCY_LEASE_SECONDS', 30, 1, 90) * 1000,
    },
    loader: {
      pollMs: integer(env, 'CDP_LOADER_POLL_MS', 1000, 10, 600_000),
      leaseMs: integer(env, 'CDP_LOADER_LEASE_SECONDS', 30, 1, 86_400) * 1000,
      recordsPerMessage: integer(env, 'CDP_LOADER_RECORDS_PER_MESSAGE', 500, 1, 1000),
    },
    heapGrowingPercent: integer(env, 'CDP_HEAP_GROWING_PERCENT', 50, 0, 1000),
    bucketStore: oneOf(env, 'CDP_BUCKETS', BUCKET_DRIVERS, 'local'),
    s3: {
      endpoint: env.CDP_S3_ENDPOINT || undefined,
      region: env.CDP_S3_REGION || 'us-east-1',
      accessKeyId: env.CDP_S3_ACCESS_KEY_ID || undefined,
      secretAccessKey: env.CDP_S3_SECRET_ACCESS_KEY || undefined,
      forcePathStyle: (env.CDP_S3_PATH_STYLE || 'true') !== 'false',
      buckets: {
        incoming: env.CDP_S3_BUCKET_INCOMING || 'cdp-incoming',
        scratch: env.CDP_S3_BUCKET_SCRATCH || 'cdp-scratch',
        export: env.CDP_S3_BUCKET_EXPORT || 'cdp-export',
      },
      sse: sse(env.CDP_S3_SSE),
      kmsKeyId: env.CDP_S3_KMS_KEY_ID || undefined,
    },
    uploads: {
      signingKey: env.CDP_UPLOAD_SIGNING_KEY || '',
      expiresSeconds: integer(env, 'CDP_UPLOAD_EXPIRES_SECONDS', 900, 1, 7 * 86_400),
      publicUrl: env.CDP_PUBLIC_URL || undefined,
    },
    trustedProxies: addressList(env, 'CDP_TRUSTED_PROXIES'),
    testFaults: env.CDP_TEST_FAULTS || undefined,
    unsubscribeLinks: {
      secret: secret(env, 'CDP_UNSUBSCRIBE_SECRET'),
      ttlMs: integer(env, 'CDP_UNSUBSCRIBE_LINK_TTL_SECONDS', 60 * 86_400, 60, 3650 * 86_400) * 1000,
      baseUrl: baseUrl(env, 'CDP_PUBLIC_URL'),
    },
    console: {
      secret: consoleSecret(env.CDP_CONSOLE_SECRET),
      sessionTtlMs: integer(env, 'CDP_CONSOLE_SESSION_MINUTES', 30, 1, 24 * 60) * 60_000,
      assetsDir: resolve(env.CDP_CONSOLE_ASSETS_DIR || 'dist/console'),
      inspectorBound: integer(env, 'CDP_INSPECTOR_MAX_PER_SECOND', 200, 1, 100_000),
    },
    deprecations,
  };
}

/** Comma-separated server URLs (a seed list): at least one. */
/** CLICKHOUSE_CLUSTER: a cluster of the servers' `remote_servers`, spelled as `ON CLUSTER` takes it. */
function clusterName(raw: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(raw))
    throw new ConfigError(`CLICKHOUSE_CLUSTER=${raw} must be letters, digits and _ (a cluster name)`);
  return raw;
}

function seedList(env: Env, name: string, fallback: string): string[] {
  const seeds = (env[name] || fallback)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (seeds.length === 0) throw new ConfigError(`${name} names no server`);
  return seeds;
}

/** A signing secret: long enough that guessing it is out of the question. */
function secret(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < 32) throw new ConfigError(`${name} must be at least 32 characters`);
  return raw;
}

/** An http(s) URL without a trailing slash, or unset. */
function baseUrl(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name}=${raw} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${name}=${raw} must be an http or https URL`);
  return raw.replace(/\/+$/, '');
}

function sse(value: string | undefined): S3Settings['sse'] {
  if (value === undefined || value === '' || value === 'AES256') return 'AES256';
  if (value === 'none') return undefined;
  if (value === 'aws:kms') return value;
  throw new ConfigError(`CDP_S3_SSE=${value} must be AES256, aws:kms or none`);
}

/** A session secret shorter than 32 characters would make forged cookies cheaper to find. */
function consoleSecret(value: string | undefined): string | undefined {
  if (!value) return undefined;
  if (value.length < 32) throw new ConfigError('CDP_CONSOLE_SECRET must be at least 32 characters');
  return value;
}

/** IPv4 or IPv6 addresses, each optionally with a CIDR prefix length. */
function addressList(env: Env, name: string): string[] {
  const raw = env[name];
  if (!raw) return [];
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address = '', bits, extra] = entry.split('/');
    const v4 = isIP(address) === 4;
    const okBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (v4 ? 32 : 128));
    if (!isIP(address) || !okBits || extra !== undefined)
      throw new ConfigError(`${name}: ${entry} is not an IP address or CIDR range`);
  }
  return entries;
}

function natsPrefix(value: string): string {
  if (!/^[A-Za-z][A-Za-z0-9]{0,31}$/.test(value))
    throw new ConfigError(`CDP_NATS_PREFIX=${value} must be letters and digits`);
  return value.toUpperCase();
}

/** The roles a process plays; the all-in-one process plays all of them. */
export type Role = 'api' | 'processor' | 'exporter' | 'loader';

/**
 * Checks that a wiring can work for the roles of this process: a role in its own process cannot
 * share a local log, in-memory state or a local file with another process, so those need the real engines.
 */
export function checkWiring(config: AppConfig, roles: readonly Role[], allInOne: boolean): void {
  if (allInOne) return;
  const problems: string[] = [];
  if (config.bus === 'log') problems.push('CDP_BUS=log only works in the all-in-one process; use nats');
  const inProcess = Object.entries({
    CDP_IDENTITY: config.identity,
    CDP_RATE_LIMITS: config.rateLimiter,
    CDP_IDEMPOTENCY: config.idempotencyStore,
    CDP_ORDERS: config.orderState,
    CDP_CONSENT: config.consentState,
  })
    .filter(([, driver]) => driver !== 'redis')
    .map(([name, driver]) => `${name}=${driver}`);
  if (inProcess.length)
    problems.push(
      `${inProcess.join(', ')} only work${inProcess.length > 1 ? '' : 's'} in the all-in-one process; use redis`,
    );
  if (config.metadata === 'file' && roles.includes('api')) {
    problems.push('CDP_METADATA=file cannot be shared by separate processes; use nats');
  }
  if (problems.length) throw new ConfigError(problems.join('; '));
}

/**
 * How the buckets are named where a path is shown (activity entries, upload and export records): their S3
 * names, or their directories' names (where a directory is on the server is none of a caller's business).
 */
export function bucketNames(config: AppConfig): { incoming: string; scratch: string; export: string } {
  if (config.bucketStore === 's3') return config.s3.buckets;
  return {
    incoming: basename(config.buckets.incoming),
    scratch: basename(config.buckets.scratch),
    export: basename(config.buckets.export),
  };
}
