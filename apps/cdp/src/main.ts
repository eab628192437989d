import { startWithRoleNodeFlags } from '@cdp/runtime/node-flags';

// First, before the app's modules load: it may start this process again with the roles' node flags.
startWithRoleNodeFlags();
const { runMain } = await import('@cdp/runtime');
const { createCdpApp } = await import('./cdp.app.js');

/** `npm start`: the whole platform in one process on its embedded defaults. */
await runMain('cdp', createCdpApp);
