// `npm start`: builds when the sources are newer than the last build, then runs the all-in-one
// server in this same process (so SIGTERM reaches it directly).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.build-stamp');
const entry = process.argv[2] ?? 'apps/cdp/src/main.js';

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path));
    else if (entry.name.endsWith('.ts')) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

const sources = Math.max(
  newest(join(root, 'apps')),
  newest(join(root, 'libs')),
  statSync(join(root, 'package.json')).mtimeMs,
);
if (!existsSync(stamp) || statSync(stamp).mtimeMs < sources || !existsSync(join(root, 'dist', entry))) {
  process.stderr.write('building…\n');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  writeFileSync(stamp, new Date().toISOString());
}
await import(pathToFileURL(join(root, 'dist', entry)).href);
