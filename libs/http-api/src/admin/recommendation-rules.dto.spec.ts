import 'reflect-metadata';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { AccountsService } from '@cdp/accounts';
import { ApiError, type Invalid } from '@cdp/contracts';
import { FileMetadataStore } from '@cdp/metadata/file';
import { SchemaRegistry } from '@cdp/schema';
import { RecommendationRulesPipe } from './recommendation-rules.dto.js';

/** The rules pipe on a real (file) metadata store: an account whose products have one boolean field. */
describe('RecommendationRulesPipe (PUT /admin/v1/accounts/:id/recommendation-rules)', () => {
  const metadata = new FileMetadataStore(mkdtempSync(join(tmpdir(), 'cdp-rules-')));
  const accounts = new AccountsService(metadata);
  const schema = new SchemaRegistry(metadata);
  const pipe = new RecommendationRulesPipe(accounts, schema);
  let account: string;

  beforeAll(async () => {
    account = (await accounts.create({ name: 'shop' })).account.id;
    await schema.createFields(account, 'products', {
      fields: [
        { name: 'in_stock', type: 'boolean', display_name: 'In stock' },
        { name: 'rating', type: 'number', display_name: 'Rating' },
      ],
    });
  });

  const invalidsOf = async (body: unknown): Promise<Invalid[]> => {
    const err = await pipe.transform({ account, body }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError & { detail: { invalids: Invalid[] } }).detail.invalids;
  };

  it('hands the route the rules as stored: rules that filter nothing left out', async () => {
    await expect(
      pipe.transform({
        account,
        body: {
          require_image: false,
          require_price: true,
          min_price: 1,
          require_true: ['in_stock', 'in_stock'],
        },
      }),
    ).resolves.toEqual({ require_price: true, min_price: 1, require_true: ['in_stock'] });
    await expect(pipe.transform({ account, body: {} })).resolves.toEqual({});
  });

  it("answers the shape and the account's fields in one envelope", async () => {
    expect(await invalidsOf({ require_true: ['rating'], min_price: 'x', colour: 'red' })).toEqual([
      { field: 'colour', reason: expect.stringMatching(/^is not a rule \(exclude_categories, /) },
      { field: 'min_price', reason: 'must be a number' },
      { field: 'require_true', reason: 'names no custom boolean product field: rating' },
    ]);
    expect(await invalidsOf({ min_price: 5, max_price: 1, exclude_categories: ['ok', ' '] })).toEqual([
      { field: 'exclude_categories', reason: expect.stringContaining('non-empty categories') },
      { field: 'max_price', reason: 'must not be below min_price' },
    ]);
    expect(await invalidsOf({ require_true: 'in_stock', require_image: 'yes' })).toEqual([
      { field: 'require_image', reason: 'must be a boolean' },
      { field: 'require_true', reason: 'must be an array of custom boolean product fields' },
    ]);
    expect(await invalidsOf([])).toEqual([{ field: 'body', reason: 'must be an object' }]);
  });

  it('answers 404 for an unknown account before reading its rules', async () => {
    const err = await pipe.transform({ account: 'nobody', body: { colour: 1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(404);
  });
});
