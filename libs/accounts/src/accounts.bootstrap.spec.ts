import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@cdp/config';
import { createLogger } from '@cdp/logger';
import { FileMetadataStore } from '@cdp/metadata/file';
import { AccountsBootstrap } from './accounts.bootstrap.js';
import { AccountsService } from './accounts.service.js';

let dir: string;
let store: FileMetadataStore;
let accounts: AccountsService;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdp-bootstrap-'));
  store = new FileMetadataStore(dir);
  accounts = new AccountsService(store);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A start of the all-in-one process (createFirst) or of an API replica, on the same metadata. */
async function start(createFirst: boolean): Promise<AccountsBootstrap> {
  const bootstrap = new AccountsBootstrap(accounts, loadConfig({}), createLogger('silent'), createFirst);
  await bootstrap.onApplicationBootstrap();
  return bootstrap;
}

describe('AccountsBootstrap', () => {
  it('creates the first account on an empty install and hands its working keys to the banner', async () => {
    const { createdKeys } = await start(true);
    expect(createdKeys).toBeDefined();
    const asPrivate = await accounts.authenticate(createdKeys!.privateKey);
    const asPublic = await accounts.authenticate(createdKeys!.publicKey);
    expect(asPrivate).toMatchObject({ private: true, trackerId: createdKeys!.publicKey });
    expect(asPublic).toMatchObject({ private: false, account: asPrivate.account });
  });

  it('creates nothing, and shows no keys, once an account exists or where it may not create one', async () => {
    await start(true);
    expect((await start(true)).createdKeys).toBeUndefined();
    expect(await accounts.list()).toHaveLength(1);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    store = new FileMetadataStore(dir);
    accounts = new AccountsService(store);
    expect((await start(false)).createdKeys).toBeUndefined();
    expect(await accounts.list()).toHaveLength(0);
  });
});
