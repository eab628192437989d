import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';

/** One built file of the browser SDK, as the API serves it. */
export interface SdkAsset {
  body: Buffer;
  contentType: string;
  etag: string;
}

/** The files under `/sdk/v1/`: the script-tag build, the ES module, and their source maps. */
export const SDK_FILES: Readonly<Record<string, string>> = {
  'svc.js': 'application/javascript; charset=utf-8',
  'svc.js.map': 'application/json; charset=utf-8',
  'svc.mjs': 'application/javascript; charset=utf-8',
  'svc.mjs.map': 'application/json; charset=utf-8',
};

/**
 * The browser SDK's built files (`npm run build` writes them to `dist/sdk/v1`), read once and kept in
 * memory with a content hash as their ETag. This file sits four folders below the root the build
 * writes into, both as source (`libs/http-api/src/sdk`, root the repository) and built (`dist/libs/…`).
 */
@Injectable()
export class SdkAssets {
  private readonly cache = new Map<string, SdkAsset | undefined>();
  private readonly dirs: string[];

  constructor() {
    const root = join(import.meta.dirname, '..', '..', '..', '..');
    this.dirs = [join(root, 'sdk', 'v1'), join(root, 'dist', 'sdk', 'v1')];
  }

  get(file: string): SdkAsset | undefined {
    if (!Object.hasOwn(SDK_FILES, file)) return undefined;
    if (!this.cache.has(file)) this.cache.set(file, this.read(file));
    return this.cache.get(file);
  }

  private read(file: string): SdkAsset | undefined {
    const dir = this.dirs.find((d) => existsSync(join(d, file)));
    if (!dir) return undefined;
    const body = readFileSync(join(dir, file));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    return { body, contentType: SDK_FILES[file]!, etag };
  }
}
