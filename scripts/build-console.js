// Bundles the console (console/src, Preact) into dist/console: app.js, app.css, index.html. No CDN.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'dist', 'console');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(root, 'console', 'src', 'main.tsx')],
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: false,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outfile: join(out, 'app.js'),
  logLevel: 'warning',
});
copyFileSync(join(root, 'console', 'src', 'app.css'), join(out, 'app.css'));
copyFileSync(join(root, 'console', 'src', 'index.html'), join(out, 'index.html'));
