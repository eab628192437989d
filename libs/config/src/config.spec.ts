import { checkWiring, ConfigError, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('defaults to the embedded wiring', () => {
    const c = loadConfig({});
    expect([c.bus, c.identity, c.store, c.metadata, c.port]).toEqual(['log', 'memory', 'chdb', 'file', 3000]);
    expect([c.rateLimiter, c.idempotencyStore, c.orderState, c.consentState]).toEqual([
      'memory',
      'file',
      'memory',
      'memory',
    ]);
    expect(c.deprecations).toEqual([]);
  });

  it('still takes CDP_BUS=memory for the local log, with one warning line naming the new name', () => {
    const c = loadConfig({ CDP_BUS: 'memory' });
    expect(c.bus).toBe('log');
    expect(c.deprecations).toEqual([
      'CDP_BUS=memory is deprecated: use CDP_BUS=log (the same driver, renamed)',
    ]);
    expect(loadConfig({ CDP_BUS: 'log' }).deprecations).toEqual([]);
    expect(loadConfig({ CDP_BUS: 'nats' }).deprecations).toEqual([]);
  });

  it('gives the rate limiter, idempotency, orders and consent the identity driver unless each is set', () => {
    const redis = loadConfig({ CDP_IDENTITY: 'redis' });
    expect([redis.rateLimiter, redis.idempotencyStore, redis.orderState, redis.consentState]).toEqual([
      'redis',
      'redis',
      'redis',
      'redis',
    ]);
    const mixed = loadConfig({
      CDP_IDENTITY: 'redis',
      CDP_RATE_LIMITS: 'memory',
      CDP_IDEMPOTENCY: 'file',
      CDP_ORDERS: 'memory',
      CDP_CONSENT: 'memory',
    });
    expect([mixed.rateLimiter, mixed.idempotencyStore, mixed.orderState, mixed.consentState]).toEqual([
      'memory',
      'file',
      'memory',
      'memory',
    ]);
    expect(loadConfig({ CDP_RATE_LIMITS: 'redis' })).toMatchObject({
      identity: 'memory',
      rateLimiter: 'redis',
    });
    expect(() => loadConfig({ CDP_IDEMPOTENCY: 'memory' })).toThrow(/CDP_IDEMPOTENCY=memory .*file, redis/);
    expect(() => loadConfig({ CDP_ORDERS: 'postgres' })).toThrow(ConfigError);
  });

  it('lays the Redis identity index out by the Redis it finds unless CDP_IDENTITY_SHARDING names a layout', () => {
    expect(loadConfig({ CDP_IDENTITY: 'redis' }).identitySharding).toBe('auto');
    for (const layout of ['account', 'shards'] as const)
      expect(loadConfig({ CDP_IDENTITY: 'redis', CDP_IDENTITY_SHARDING: layout }).identitySharding).toBe(
        layout,
      );
    expect(() => loadConfig({ CDP_IDENTITY_SHARDING: 'slots' })).toThrow(/CDP_IDENTITY_SHARDING=slots/);
  });

  it('fails the boot on an unknown driver instead of falling back', () => {
    expect(() => loadConfig({ CDP_BUS: 'kafka' })).toThrow(ConfigError);
    expect(() => loadConfig({ CDP_RATE_LIMITS: 'memcached' })).toThrow(/CDP_RATE_LIMITS=memcached/);
    expect(() => loadConfig({ CDP_IDENTITY: 'memcached' })).toThrow(
      /CDP_IDENTITY=memcached is not a known driver/,
    );
    expect(() => loadConfig({ CDP_STORE: 'postgres' })).toThrow(ConfigError);
  });

  it('reads LOG_FORMAT: auto unless json or pretty is asked for; anything else fails the boot', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT=xml .*auto, json, pretty/);
  });

  it("reads LOG_LEVEL as one of pino's levels; anything else fails the boot with the setting named", () => {
    expect(loadConfig({}).logLevel).toBe('info');
    expect(loadConfig({ LOG_LEVEL: 'warn' }).logLevel).toBe('warn');
    expect(() => loadConfig({ LOG_LEVEL: 'log' })).toThrow(/LOG_LEVEL=log is not a log level/);
  });

  it('puts metadata in JetStream KV when the bus is NATS', () => {
    expect(loadConfig({ CDP_BUS: 'nats' }).metadata).toBe('nats');
    expect(loadConfig({ CDP_BUS: 'nats', CDP_METADATA: 'file' }).metadata).toBe('file');
  });

  it('takes NATS_URL as a comma-separated seed list, and leaves the replicas to the cluster unless told', () => {
    expect(loadConfig({ NATS_URL: 'nats://a:4222, nats://b:4222,,nats://c:4222' }).natsServers).toEqual([
      'nats://a:4222',
      'nats://b:4222',
      'nats://c:4222',
    ]);
    expect(loadConfig({}).natsServers).toEqual(['nats://127.0.0.1:4222']);
    expect(() => loadConfig({ NATS_URL: ' , ' })).toThrow(/NATS_URL names no server/);
    expect(loadConfig({}).natsReplicas).toBeUndefined();
    expect(loadConfig({ CDP_NATS_REPLICAS: '1' }).natsReplicas).toBe(1);
    expect(() => loadConfig({ CDP_NATS_REPLICAS: '7' })).toThrow(/CDP_NATS_REPLICAS/);
  });

  it('takes a ClickHouse cluster name with a ClickHouse server only, spelled as ON CLUSTER takes it', () => {
    expect(loadConfig({}).clickhouse.cluster).toBeUndefined();
    const cluster = loadConfig({
      CDP_STORE: 'clickhouse',
      CLICKHOUSE_URL: 'http://ch1:8123,http://ch2:8123',
      CLICKHOUSE_CLUSTER: 'cdp',
    }).clickhouse;
    expect(cluster).toMatchObject({ url: 'http://ch1:8123,http://ch2:8123', cluster: 'cdp' });
    expect(() => loadConfig({ CLICKHOUSE_CLUSTER: 'cdp' })).toThrow(/CDP_STORE=clickhouse/);
    expect(() => loadConfig({ CDP_STORE: 'clickhouse', CLICKHOUSE_CLUSTER: 'cdp; DROP' })).toThrow(
      ConfigError,
    );
  });

  it('remembers idempotent answers 24 hours unless told otherwise', () => {
    expect(loadConfig({}).idempotency).toEqual({ ttlMs: 86_400_000, leaseMs: 30_000 });
    expect(loadConfig({ CDP_IDEMPOTENCY_TTL_SECONDS: '5' }).idempotency.ttlMs).toBe(5000);
    expect(() => loadConfig({ CDP_IDEMPOTENCY_TTL_SECONDS: '0' })).toThrow(/CDP_IDEMPOTENCY_TTL_SECONDS/);
    expect(() => loadConfig({ CDP_IDEMPOTENCY_LEASE_SECONDS: '600' })).toThrow(/LEASE/);
  });

  it('believes X-Forwarded-For from no proxy unless told which, and refuses what is not an address', () => {
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(loadConfig({ CDP_TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1,::1,fd00::/8' }).trustedProxies).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
      '::1',
      'fd00::/8',
    ]);
    for (const bad of ['10.0.0.0/33', 'proxy.local', '10.0.0.1/8/1', '::1/129'])
      expect(() => loadConfig({ CDP_TRUSTED_PROXIES: bad })).toThrow(ConfigError);
  });

  it('wants both bootstrap keys or neither, and a valid port', () => {
    expect(() => loadConfig({ CDP_BOOTSTRAP_PUBLIC_KEY: 'x' })).toThrow(/set together/);
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT/);
  });
});

describe('checkWiring', () => {
  it('refuses in-memory drivers in a process that shares its work with others', () => {
    expect(() => checkWiring(loadConfig({}), ['api'], false)).toThrow(/CDP_BUS=log/);
    expect(() => checkWiring(loadConfig({ CDP_BUS: 'nats' }), ['processor'], false)).toThrow(
      /CDP_IDENTITY=memory/,
    );
    expect(() =>
      checkWiring(loadConfig({ CDP_BUS: 'nats', CDP_IDENTITY: 'redis' }), ['api'], false),
    ).not.toThrow();
    expect(() => checkWiring(loadConfig({}), ['api', 'processor'], true)).not.toThrow();
  });

  it('names each port left in the process when the others are shared', () => {
    const scaled = { CDP_BUS: 'nats', CDP_IDENTITY: 'redis', CDP_METADATA: 'nats' };
    expect(() => checkWiring(loadConfig({ ...scaled, CDP_ORDERS: 'memory' }), ['processor'], false)).toThrow(
      /^CDP_ORDERS=memory only works in the all-in-one process; use redis$/,
    );
    expect(() =>
      checkWiring(
        loadConfig({ ...scaled, CDP_IDEMPOTENCY: 'file', CDP_RATE_LIMITS: 'memory' }),
        ['api'],
        false,
      ),
    ).toThrow(/CDP_RATE_LIMITS=memory, CDP_IDEMPOTENCY=file only work in/);
  });

  it('reads the unsubscribe link settings: a long secret, a TTL, an http(s) base URL', () => {
    expect(loadConfig({}).unsubscribeLinks).toEqual({
      secret: undefined,
      ttlMs: 60 * 86_400_000,
      baseUrl: undefined,
    });
    const c = loadConfig({
      CDP_UNSUBSCRIBE_SECRET: 'x'.repeat(32),
      CDP_UNSUBSCRIBE_LINK_TTL_SECONDS: '120',
      CDP_PUBLIC_URL: 'https://cdp.example.com/',
    });
    expect(c.unsubscribeLinks).toEqual({
      secret: 'x'.repeat(32),
      ttlMs: 120_000,
      baseUrl: 'https://cdp.example.com',
    });
    expect(() => loadConfig({ CDP_UNSUBSCRIBE_SECRET: 'short' })).toThrow(ConfigError);
    expect(() => loadConfig({ CDP_PUBLIC_URL: 'ftp://x' })).toThrow(ConfigError);
    expect(() => loadConfig({ CDP_PUBLIC_URL: 'not a url' })).toThrow(ConfigError);
  });
});
