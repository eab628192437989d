import { startWithRoleNodeFlags } from '@cdp/runtime/node-flags';

/**
 * Imported first by a benchmark that runs the app in its own process, so that it measures the runtime
 * the roles run on (their node flags; docs/operations.md "Memory"), not V8's defaults: a module's
 * imports run in order, so this restarts the process before the app's modules load.
 */
startWithRoleNodeFlags();
