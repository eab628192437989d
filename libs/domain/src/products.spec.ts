import {
  categoryPath,
  CATEGORY_DELIMITER,
  mergeProduct,
  normalizeProduct,
  PRODUCT_FIELDS,
} from './products.js';

describe('products (spec "Product fields")', () => {
  it('types the fields of the product table', () => {
    expect(PRODUCT_FIELDS).toEqual({
      product_id: 'string',
      category: 'string',
      name: 'string',
      brand: 'string',
      sku: 'string',
      upc: 'string',
      image_url: 'string',
      price: 'number',
      parent_product_id: 'string',
    });
  });

  it('keeps values as given (a hierarchical category with its delimiter), drops undefined fields, "" unsets', () => {
    expect(
      normalizeProduct({
        product_id: 'p1',
        category: 'Electronics > Computers > Laptops',
        price: 9.99,
        parent_product_id: 'p0',
        sku: '',
        colour: 'red',
      }),
    ).toEqual({
      product_id: 'p1',
      fields: {
        category: 'Electronics > Computers > Laptops',
        price: 9.99,
        parent_product_id: 'p0',
        sku: null,
      },
      dropped: ['colour'],
    });
  });

  it('splits a category on " > " only (the delimiter includes the spaces)', () => {
    expect(CATEGORY_DELIMITER).toBe(' > ');
    expect(categoryPath('Electronics > Computers > Laptops')).toEqual([
      'Electronics',
      'Computers',
      'Laptops',
    ]);
    expect(categoryPath('A>B')).toEqual(['A>B']);
    expect(categoryPath('Laptops')).toEqual(['Laptops']);
  });

  it('an update replaces the values it names (no history) and keeps the others; null removes', () => {
    expect(mergeProduct({ name: 'Old', price: 1, brand: 'B' }, { name: 'New', price: null })).toEqual({
      name: 'New',
      brand: 'B',
    });
  });
});
