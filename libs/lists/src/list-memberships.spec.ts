import { MemoryConsentState } from '@cdp/consent/memory';
import { listMemberships } from './list-memberships.js';

describe('listMemberships (the membership rule)', () => {
  it("fills the lists the survivor never decided on from merged customers; between untimed decisions the survivor's wins", async () => {
    const consent = new MemoryConsentState();
    await consent.apply('a', [
      { customerId: 'survivor', listId: 'news', subscribed: false },
      { customerId: 'merged', listId: 'news', subscribed: true },
      { customerId: 'merged', listId: 'promo', subscribed: true },
    ]);
    expect(await listMemberships(consent, 'a', 'survivor', ['merged'])).toEqual({ news: false, promo: true });
    expect(await listMemberships(consent, 'a', 'nobody', [])).toEqual({});
  });

  it('takes the latest decision, the survivor’s included, whatever order the driver lists them in', async () => {
    const consent = new MemoryConsentState();
    await consent.apply('a', [
      { customerId: 'survivor', listId: 'news', subscribed: true, at: 1 },
      // The survivor subscribed first; a visitor merged into it unsubscribed later: unsubscribed.
      { customerId: 'survivor', listId: 'deals', subscribed: true, at: 100 },
      { customerId: 'visitor-b', listId: 'deals', subscribed: false, at: 200 },
      // Two visitors merged into the survivor: the later unsubscribe from promo stands.
      { customerId: 'visitor-a', listId: 'promo', subscribed: false, at: 300 },
      { customerId: 'visitor-b', listId: 'promo', subscribed: true, at: 200 },
      // Decisions of no known time: the smallest customer id's, in any order.
      { customerId: 'visitor-a', listId: 'legacy', subscribed: false },
      { customerId: 'visitor-b', listId: 'legacy', subscribed: true },
    ]);
    for (const merged of [
      ['visitor-a', 'visitor-b'],
      ['visitor-b', 'visitor-a'],
    ])
      expect(await listMemberships(consent, 'a', 'survivor', merged)).toEqual({
        news: true,
        deals: false,
        promo: false,
        legacy: false,
      });
  });
});
