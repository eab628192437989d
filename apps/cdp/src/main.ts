import { runMain } from '@cdp/runtime';
import { createCdpApp } from './cdp.app.js';

/** `npm start`: the whole platform in one process on its embedded defaults. */
await runMain('cdp', createCdpApp);
