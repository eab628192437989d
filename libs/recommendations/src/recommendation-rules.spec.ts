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

  it('names every problem', () => {
    const checked = checkRules(
      {
        exclude_categories: [''],
        require_image: 'yes',
        min_price: 5,
        max_price: 1,
        require_true: ['rating'],
        x: 1,
      },
      booleans,
    );
    expect('problems' in checked && checked.problems.map((p) => p.field).sort()).toEqual([
      'exclude_categories',
      'max_price',
      'require_image',
      'require_true',
      'x',
    ]);
    expect(checkRules([], booleans)).toEqual({ problems: [{ field: 'body', reason: expect.any(String) }] });
  });
});
