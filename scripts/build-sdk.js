// Builds the browser SDK (sdk/browser) with esbuild into dist/sdk/v1: svc.js (script tag, global `svc`)
// and svc.mjs (ES module), each minified with a source map. Fails when the script-tag build is over its
// budget (8 KiB minified and gzipped): the SDK runs on every page of a site.
import { build } from 'esbuild';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'sdk', 'browser', 'src');
const out = join(root, 'dist', 'sdk', 'v1');
export const BUDGET_BYTES = 8 * 1024;

mkdirSync(out, { recursive: true });
const common = { bundle: true, minify: true, sourcemap: true, target: ['es2019'], legalComments: 'none' };
await build({
  ...common,
  entryPoints: [join(src, 'global.ts')],
  outfile: join(out, 'svc.js'),
  format: 'iife',
});
await build({
  ...common,
  entryPoints: [join(src, 'index.ts')],
  outfile: join(out, 'svc.mjs'),
  format: 'esm',
});

for (const file of ['svc.js', 'svc.mjs']) {
  const bytes = readFileSync(join(out, file));
  const gz = gzipSync(bytes, { level: 9 }).length;
  process.stderr.write(
    `sdk: ${file} ${bytes.length} B minified, ${gz} B gzipped (budget ${BUDGET_BYTES} B)\n`,
  );
  if (gz > BUDGET_BYTES) {
    process.stderr.write(`sdk: ${file} is over its budget of ${BUDGET_BYTES} B gzipped\n`);
    process.exit(1);
  }
}
