/**
 * The layering rules (`npm run check`). An adapter is a driver's own code: the per-driver folders of a
 * lib (what `@cdp/<lib>/<driver>` names), the Redis connection (libs/redis) and the DuckDB export runner.
 * Tests, contract tests, test harnesses and benchmarks may build adapters directly; code may not.
 */
const ADAPTER =
  '^libs/[^/]+/src/(memory|redis|nats|local-log|chdb|clickhouse-http|file|local|s3)/|^libs/redis/|^libs/exports/src/export[.]runner[.]ts$';
const DRIVER_PACKAGE = 'node_modules/(chdb|@chdb|@duckdb|@clickhouse|redis|@redis|@nats-io|@aws-sdk)/';
const TESTING = '[.](spec|e2e-spec|contract)[.]ts$|^test/|^benchmarks/|/testing/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'domain-is-plain',
      comment: 'libs/domain is the rules alone: no Nest, no driver, no other lib.',
      severity: 'error',
      from: { path: '^libs/domain/' },
      to: { path: ['node_modules/@nestjs/', DRIVER_PACKAGE, ADAPTER, '^libs/(?!domain/)'] },
    },
    {
      name: 'no-lib-imports-an-app',
      severity: 'error',
      from: { path: '^libs/' },
      to: { path: '^apps/' },
    },
    {
      name: 'only-drivers-import-adapters',
      comment:
        'libs/drivers picks the adapters the configuration names; the rest of the code sees ports. ' +
        'An adapter may use its own lib (and the shared Redis connection); the export worker runs the DuckDB runner.',
      severity: 'error',
      from: {
        path: '.',
        pathNot: [
          '^libs/drivers/',
          ADAPTER,
          TESTING,
          '^libs/exports/src/(worker/|export-worker[.]module[.]ts$|export[.]worker[.]ts$)',
        ],
      },
      to: { path: ADAPTER },
    },
    {
      name: 'ports-never-import-adapters',
      comment: "A port (and a lib's port entry, src/index.ts) knows no driver.",
      severity: 'error',
      from: { path: '[.]port[.]ts$|^libs/[^/]+/src/index[.]ts$', pathNot: ADAPTER },
      to: { path: [ADAPTER, DRIVER_PACKAGE] },
    },
    {
      name: 'driver-packages-only-in-adapters',
      comment:
        'A native or network client library is loaded by its adapter only (libs/drivers connects NATS).',
      severity: 'error',
      from: { path: '.', pathNot: [ADAPTER, TESTING, '^libs/drivers/'] },
      to: { path: DRIVER_PACKAGE, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'api-role-never-reaches-duckdb',
      comment:
        'The API records export jobs (ExportsApiModule); only the worker (@cdp/exports/worker) runs them.',
      severity: 'error',
      from: { path: '^(libs/http-api|apps/api)/|^libs/exports/src/exports-api[.]module[.]ts$' },
      to: { path: '^libs/exports/src/export[.]runner[.]ts$|node_modules/@duckdb/', reachable: true },
    },
    {
      name: 'only-the-api-role-loads-http-api',
      comment: 'The processor and the exporter serve /health alone (libs/health), not the API.',
      severity: 'error',
      from: { path: '^apps/(processor|exporter)/' },
      to: { path: '^libs/http-api/', reachable: true },
    },
    {
      name: 'no-cycles',
      comment:
        'No cycle between files. Between libraries (libs/A → libs/B → … → libs/A, a subpath entry ' +
        'counting as its library) the rule is scripts/lint-library-cycles.js, run after this by lint:layers.',
      severity: 'error',
      from: { path: '^(libs|apps)/' },
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|data|coverage)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.cjs', '.mjs', '.json', '.d.ts'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};
