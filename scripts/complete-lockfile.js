// `npm run lock:complete`, after changing dependencies: npm leaves out of package-lock.json the
// platform builds (darwin, win32, other CPUs) of optional native dependencies that the registry
// mirror here does not carry, and `npm ci` then refuses the lock file. This adds an entry for each,
// with the os/cpu/libc its name declares, so `npm ci` skips them on this platform and installs them
// on theirs.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
const OS = [
  'darwin',
  'win32',
  'linux',
  'android',
  'freebsd',
  'openharmony',
  'sunos',
  'netbsd',
  'openbsd',
  'aix',
];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64', 'wasm32'];
let added = 0;
for (const [path, entry] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (packages[key]) continue;
    const platform = name.split('/').pop();
    const os = OS.find((o) => platform.includes(o));
    const cpu = CPU.find((c) => new RegExp(`-${c}(-|$)`).test(platform));
    if (!os || !cpu) continue; // not a platform build: leave it to npm
    const added_ = { version: range.replace(/^[\^~=]/, ''), cpu: [cpu], os: [os], optional: true };
    if (platform.includes('musl')) added_.libc = ['musl'];
    else if (platform.includes('gnu')) added_.libc = ['glibc'];
    if (entry.dev || path === '') added_.dev = entry.dev === true;
    if (!added_.dev) delete added_.dev;
    packages[key] = added_;
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform entries`);
