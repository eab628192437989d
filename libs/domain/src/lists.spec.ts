import { listIdFromName, listNameKey } from './lists.js';

describe('listIdFromName (spec/NOTES.md "Lists")', () => {
  it.each([
    ['Weekly News', 'weekly_news'],
    ['VIP -- Customers!!', 'vip_customers_'],
    ['  spaced  out ', '_spaced_out_'],
    ['2024 Promo', '2024_promo'],
    ['Café Crème', 'café_crème'],
    ['a.b/c', 'a_b_c'],
  ])('%s → %s', (name, id) => {
    expect(listIdFromName(name)).toBe(id);
  });
});

describe('listNameKey', () => {
  it('treats names that differ only in case or surrounding blanks as one name', () => {
    expect(listNameKey(' News ')).toBe(listNameKey('NEWS'));
    expect(listNameKey('a-b')).not.toBe(listNameKey('a b'));
  });
});
