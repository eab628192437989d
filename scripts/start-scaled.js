// `npm run start:scaled`: the scaled-out wiring on this machine: the API, the processor and the bulk-file
// loader as three processes on the local NATS (JetStream) and Redis. The API listens on PORT (3000), the
// processor's health endpoint on PORT+1, the loader's on PORT+2. The store is chDB in the processor's data
// directory unless CDP_STORE=clickhouse.
// Ctrl-C (or SIGTERM) stops them all cleanly.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { buildIfNeeded, root } from './build-if-needed.js';

const apps = {
  api: 'apps/api/src/main.js',
  processor: 'apps/processor/src/main.js',
  loader: 'apps/loader/src/main.js',
};
buildIfNeeded(Object.values(apps));
const port = Number(process.env.PORT ?? 3000);
const base = {
  CDP_BUS: 'nats',
  CDP_IDENTITY: 'redis',
  CDP_STORE: 'chdb',
  CDP_DATA_DIR: join(root, 'data', 'scaled'),
  ...process.env,
};
const children = Object.entries(apps).map(([name, entry], i) =>
  spawn(process.execPath, [join(root, 'dist', entry)], {
    // The one API process creates the first account on empty engines, as `npm start` does (README).
    env: { ...base, PORT: String(port + i), ...(name === 'api' ? { CDP_CREATE_FIRST_ACCOUNT: 'true' } : {}) },
    stdio: 'inherit',
  }).once('exit', (code) => {
    process.stderr.write(`${name} exited (${code})\n`);
    stop();
  }),
);
let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  for (const child of children) child.kill('SIGTERM');
  setTimeout(() => process.exit(0), 10_000).unref();
  Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once('exit', r))))).then(
    () => process.exit(0),
  );
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
