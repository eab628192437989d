import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryIdentityIndex, MemoryProfileState } from '@cdp/identity/memory';
import { FileMetadataStore } from '@cdp/metadata/file';
import { SchemaRegistry } from '@cdp/schema';
import type { IdentityRebuild } from './identity-rebuild.service.js';
import { IdentityStep, type IdentifiedItem } from './identity.step.js';
import { okValue } from './testing/processor-harness.js';

/**
 * The merge confidence of custom identifiers reaches the index through the step, which reads it from
 * the account's schema (the index never reads the schema itself).
 */
describe('IdentityStep with custom identifiers', () => {
  const account = 'acc';
  let n = 0;
  const item = (identifiers: Record<string, string>): IdentifiedItem => ({
    message: { id: `m${++n}`, receivedAt: 1_800_000_000_000 + n },
    index: 0,
    at: n * 1000,
    record: { identifiers },
  });

  it('never merges by a low-confidence identifier, also when its own copy of the schema predates it', async () => {
    const metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-idstep-')));
    const processorSchema = new SchemaRegistry(metadata);
    await processorSchema.read(account); // cached before the identifier exists
    // Another process (the API) creates the identifiers.
    const api = new SchemaRegistry(metadata);
    await api.createIdentifier(account, {
      name: 'device_hash',
      display_name: 'Device Hash',
      merge_confidence: 'low',
      messaging: false,
    });
    await api.createIdentifier(account, {
      name: 'loyalty_id',
      display_name: 'Loyalty ID',
      merge_confidence: 'high',
      messaging: false,
    });
    const step = new IdentityStep(
      new MemoryIdentityIndex(),
      new MemoryProfileState(),
      {} as IdentityRebuild, // a memory index is never cold
      undefined, // metrics
      undefined, // inspector
      processorSchema,
    );
    const resolve = async (ids: Record<string, string>) =>
      okValue(await step.run({ account, items: [item(ids)] })).resolutions[0]!;

    const ann = await resolve({ email: 'ann@x.com', device_hash: 'd1', loyalty_id: 'l1' });
    const bob = await resolve({ email: 'bob@x.com' });
    const low = await resolve({ email: 'bob@x.com', device_hash: 'd1' });
    expect(low).toMatchObject({ customerId: bob.customerId, merged: [], conflicts: [] });
    const alone = await resolve({ vuid: 'v1', device_hash: 'd1' });
    expect(alone).toMatchObject({ customerId: ann.customerId, merged: [] });
    const high = await resolve({ email: 'bob@x.com', loyalty_id: 'l1' });
    expect(high).toMatchObject({ customerId: ann.customerId, merged: [bob.customerId] });
  });
});
