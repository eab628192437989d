import { randomUUID } from 'node:crypto';
import { createReadStream, mkdirSync } from 'node:fs';
import { access, copyFile, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { Readable } from 'node:stream';
import type { BucketDirs } from '@cdp/config';
import type { DriverHealth } from '@cdp/contracts';
import { Buckets, checkKey, type BucketName, type ListedObject, type ObjectStat } from '../buckets.port.js';

/** Buckets as local directories (the embedded default); a write lands under a temporary name, then is renamed. */
export class LocalDirBuckets extends Buckets {
  constructor(private readonly dirs: BucketDirs) {
    super();
    for (const dir of [dirs.incoming, dirs.scratch, dirs.export]) mkdirSync(dir, { recursive: true });
  }

  private path(bucket: BucketName, key: string): string {
    return join(this.dirs[bucket], ...checkKey(key));
  }

  async write(bucket: BucketName, key: string, data: Buffer | string | Readable): Promise<void> {
    const target = this.path(bucket, key);
    await mkdir(dirname(target), { recursive: true });
    const partial = `${target}.partial-${randomUUID()}`;
    try {
      await writeFile(partial, data instanceof Readable ? data : Buffer.from(data));
      await rename(partial, target);
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
  }

  async moveIn(bucket: BucketName, key: string, file: string): Promise<void> {
    const target = this.path(bucket, key);
    await mkdir(dirname(target), { recursive: true });
    try {
      await rename(file, target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      // Another disk: copied under a temporary name first, as write() does.
      const partial = `${target}.partial-${randomUUID()}`;
      try {
        await copyFile(file, partial);
        await rename(partial, target);
      } catch (copyErr) {
        await rm(partial, { force: true });
        throw copyErr;
      }
      await rm(file, { force: true });
    }
  }

  read(bucket: BucketName, key: string): Readable {
    return createReadStream(this.path(bucket, key));
  }

  async list(bucket: BucketName, prefix: string): Promise<string[]> {
    const root = this.dirs[bucket];
    const start = prefix ? join(root, ...checkKey(prefix.replace(/\/$/, ''))) : root;
    const entries = await readdir(start, { recursive: true, withFileTypes: true }).catch(() => []);
    return entries
      .filter((e) => e.isFile() && !e.name.includes('.partial-'))
      .map((e) => relative(root, join(e.parentPath, e.name)).split('\\').join('/'))
      .sort();
  }

  async listObjects(bucket: BucketName, prefix: string): Promise<ListedObject[]> {
    const listed: ListedObject[] = [];
    for (const key of await this.list(bucket, prefix)) {
      const found = await this.stat(bucket, key);
      if (found) listed.push({ key, ...found });
    }
    return listed;
  }

  async remove(bucket: BucketName, key: string): Promise<void> {
    await rm(this.path(bucket, key), { force: true });
  }

  async stat(bucket: BucketName, key: string): Promise<ObjectStat | undefined> {
    const found = await stat(this.path(bucket, key)).catch(() => undefined);
    if (!found?.isFile()) return undefined;
    return { size: found.size, version: `${found.mtimeMs}:${found.size}` };
  }

  presignPut(): Promise<string | undefined> {
    return Promise.resolve(undefined);
  }

  presignGet(): Promise<string | undefined> {
    return Promise.resolve(undefined);
  }

  async health(): Promise<DriverHealth> {
    try {
      const { incoming, scratch, export: exports } = this.dirs;
      await Promise.all([incoming, scratch, exports].map((d) => access(d)));
      return { driver: 'local directories', ready: true };
    } catch (err) {
      return { driver: 'local directories', ready: false, detail: String(err) };
    }
  }
}
