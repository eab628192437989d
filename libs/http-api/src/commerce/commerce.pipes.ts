import { entitiesValidator, orderUpdatesValidator, productsValidator, v2EventsValidator } from '@cdp/records';
import { BatchValidationPipe, noContext } from '../ingest/batch-validation.pipe.js';

/** The pipes of the commerce routes, with what each needs of the account (its custom fields). */
export const ProductsBatch = BatchValidationPipe(productsValidator, async (schema, request) =>
  (await schema.read(request.account)).customFields('products'),
);
export const OrderUpdatesBatch = BatchValidationPipe(orderUpdatesValidator, noContext);
export const EntitiesBatch = BatchValidationPipe(entitiesValidator, async (schema, request) => {
  const account = await schema.read(request.account);
  return { customers: account.customFields('customers'), products: account.customFields('products') };
});
export const V2EventsBatch = BatchValidationPipe(v2EventsValidator, async (schema, request) => {
  const account = await schema.read(request.account);
  return {
    nowMs: request.receivedAt,
    custom: account.customFields('events'),
    customIds: account.identifierNames,
  };
});
