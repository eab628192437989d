import { checkRules } from './recommendation-rules.js';

describe('checkRules', () => {
  const booleans = new Set(['in_stock']);

  it('keeps the rules an operator may set, dropping the ones that filter nothing', () => {
    expect(
      checkRules(
        {
          exclude_categories: ['Home > Kitchen'],
          require_image: true,
          require_price: false,
          min_price: 1,
          max_price: 9.5,
          require_true: ['in_stock', 'in_stock'],
        },
        booleans,
      ),
    ).toEqual({
      rules: {
        exclude_categories: ['Home > Kitchen'],
        require_image: true,
        min_price: 1,
        max_price: 9.5,
        require_true: ['in_stock'],
      },
    });
    expect(checkRules({}, booleans)).toEqual({ rules: {} });
  });

  it('refuses require_true naming a field that is no custom boolean product field', () => {
    expect(checkRules({ require_true: ['in_stock', 'rating'], min_price: 5 }, booleans)).toEqual({
      problems: [{ field: 'require_true', reason: 'names no custom boolean product field: rating' }],
    });
  });
});
