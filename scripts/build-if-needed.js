// Builds when the sources are newer than the last build (or there is none yet).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path));
    else if (/\.(ts|tsx|css|html)$/.test(entry.name)) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

export function buildIfNeeded(entries) {
  const stamp = join(root, 'dist', '.build-stamp');
  const sources = Math.max(
    newest(join(root, 'apps')),
    newest(join(root, 'libs')),
    newest(join(root, 'console')),
    newest(join(root, 'sdk')),
    statSync(join(root, 'package.json')).mtimeMs,
  );
  const missing = entries.some((e) => !existsSync(join(root, 'dist', e)));
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= sources && !missing) return;
  process.stderr.write('building…\n');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
}

/** Marks dist/ as built from the current sources (the last step of `npm run build`). */
export function markBuilt() {
  writeFileSync(join(root, 'dist', '.build-stamp'), new Date().toISOString());
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--mark') markBuilt();
