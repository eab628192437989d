// Bundles the console (console/src, Preact) into dist/console: app.js, app.css, index.html. No CDN.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
// The chart library's own stylesheet first, the console's after it (one file: the CSP allows no other).
writeFileSync(
  join(out, 'app.css'),
  readFileSync(join(root, 'node_modules', 'uplot', 'dist', 'uPlot.min.css'), 'utf8') +
    '\n' +
    readFileSync(join(root, 'console', 'src', 'app.css'), 'utf8'),
);
copyFileSync(join(root, 'console', 'src', 'index.html'), join(out, 'index.html'));
