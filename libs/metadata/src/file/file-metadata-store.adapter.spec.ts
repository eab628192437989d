import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metadataStoreContract } from '../metadata-store.contract.js';
import { FileMetadataStore } from './file-metadata-store.adapter.js';

metadataStoreContract('file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-meta-'));
  return { store: new FileMetadataStore(dir), reopen: () => new FileMetadataStore(dir) };
});
