// `npm start`: builds if the sources changed, then runs the all-in-one server in this same process
// (so SIGTERM reaches it directly). An argument names another entry point under dist/.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildIfNeeded, root } from './build-if-needed.js';

const entry = process.argv[2] ?? 'apps/cdp/src/main.js';
buildIfNeeded([entry]);
await import(pathToFileURL(join(root, 'dist', entry)).href);
