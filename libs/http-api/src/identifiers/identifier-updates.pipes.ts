import type { CustomFields, CustomIdentifierNames } from '@cdp/domain';
import {
  consentValidator,
  metadataValidator,
  reachabilityValidator,
  type IdentifierUpdatesContext,
} from '@cdp/records';
import { BatchValidationPipe } from '../ingest/batch-validation.pipe.js';

const context = async (
  schema: {
    read(account: string): Promise<{
      customFields(object: string): CustomFields;
      identifierNames: CustomIdentifierNames;
      messagingIdentifiers: CustomIdentifierNames;
    }>;
  },
  request: { account: string; receivedAt: number },
): Promise<IdentifierUpdatesContext> => {
  const account = await schema.read(request.account);
  return {
    nowMs: request.receivedAt,
    eventFields: account.customFields('events'),
    customerFields: account.customFields('customers'),
    identifiers: account.identifierNames,
    messagingIdentifiers: account.messagingIdentifiers,
  };
};

export const ConsentBatch = BatchValidationPipe(consentValidator, context);
export const ReachabilityBatch = BatchValidationPipe(reachabilityValidator, context);
export const MetadataBatch = BatchValidationPipe(metadataValidator, context);
