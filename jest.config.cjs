/**
 * Unit tests sit beside the code (*.spec.ts); end-to-end suites live in test/ (*.e2e-spec.ts).
 * Nest 12 ships as ES modules, so Jest runs in its native ESM mode (--experimental-vm-modules)
 * and swc compiles TypeScript to ESM with decorator metadata.
 */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'es6' },
  },
];
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/test', '<rootDir>/sdk'],
  testRegex: '\\.(spec|e2e-spec)\\.ts$',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: {
    // A port entry (`@cdp/store`) and a driver's own entry (`@cdp/store/chdb`), as tsconfig.json maps them.
    '^@cdp/([^/]+)$': '<rootDir>/libs/$1/src/index.ts',
    '^@cdp/([^/]+)/([^/]+)$': '<rootDir>/libs/$1/src/$2/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.cjs'],
};
