import { profilesValidator } from '@cdp/records';
import { BatchValidationPipe } from '../ingest/batch-validation.pipe.js';

/** The pipe of `POST /v3/profiles`: the account's custom customer fields. */
export const ProfilesBatch = BatchValidationPipe(profilesValidator, async (schema, request) => {
  const account = await schema.read(request.account);
  return { custom: account.customFields('customers'), customIds: account.identifierNames };
});
