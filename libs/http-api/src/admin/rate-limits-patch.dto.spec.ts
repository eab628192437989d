import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { ArgumentMetadata } from '@nestjs/common';
import { ApiError, type Invalid } from '@cdp/contracts';
import { RateLimitsPatchDto, RateLimitsValidation } from './admin.dto.js';

/** The one validation of `PATCH /admin/v1/accounts/:id/rate-limits` (the policy trusts what it passes). */
describe('RateLimitsValidation', () => {
  const metadata: ArgumentMetadata = { type: 'body', metatype: RateLimitsPatchDto };
  const invalidsOf = async (body: unknown): Promise<Invalid[]> => {
    const err = await RateLimitsValidation.transform(body, metadata).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError & { detail: { invalids: Invalid[] } }).detail.invalids;
  };

  it('passes known families with rates, "unlimited", "no_access" or null', async () => {
    const body = { profiles: 3, events: 'unlimited', exports: 'no_access', schema: null };
    await expect(RateLimitsValidation.transform(body, metadata)).resolves.toEqual(body);
  });

  it('refuses bad rates and unknown families in one answer, and a body naming no family', async () => {
    const invalids = await invalidsOf({ profiles: 0, nonsense: 5, events: 1.5 });
    expect(invalids.map((i) => i.field).sort()).toEqual(['events', 'nonsense', 'profiles']);
    expect(await invalidsOf({})).toEqual([{ field: 'body', reason: 'names no API family' }]);
  });
});
