import { MemoryConsentState } from '@cdp/consent/memory';
import { listMemberships } from './list-memberships.js';

describe('listMemberships (the membership rule)', () => {
  it("keeps the survivor's own decisions and fills the lists it never decided on from merged customers", async () => {
    const consent = new MemoryConsentState();
    await consent.apply('a', [
      { customerId: 'survivor', listId: 'news', subscribed: false },
      { customerId: 'merged', listId: 'news', subscribed: true },
      { customerId: 'merged', listId: 'promo', subscribed: true },
    ]);
    expect(await listMemberships(consent, 'a', 'survivor', ['merged'])).toEqual({ news: false, promo: true });
    expect(await listMemberships(consent, 'a', 'nobody', [])).toEqual({});
  });
});
