import { createHash } from 'node:crypto';
import { derivedId, eventId, newCustomerId } from './ids.js';

describe('derivedId', () => {
  it('is the prefix and 22 URL-safe characters', () => {
    const id = derivedId('x_', 'msg-1', 3);
    expect(id).toMatch(/^x_[A-Za-z0-9_-]{22}$/);
  });

  it('is the same for the same parts (replays are idempotent)', () => {
    expect(derivedId('p', 'a', 1)).toBe(derivedId('p', 'a', 1));
    expect(derivedId('p', 'a', 1)).toBe(derivedId('p', 'a', '1'));
  });

  it('differs when any part differs, including where one part ends', () => {
    const ids = new Set([
      derivedId('p', 'a', 1),
      derivedId('p', 'a', 2),
      derivedId('p', 'b', 1),
      derivedId('p', 'ab', 'c'),
      derivedId('p', 'a', 'bc'),
      derivedId('p', 'abc'),
    ]);
    expect(ids.size).toBe(6);
  });
});

describe('eventId', () => {
  it('joins the message id and the index of the record', () => {
    expect(eventId('req-1', 0)).toBe('req-1-0');
    expect(eventId('req-1', 999)).toBe('req-1-999');
  });
});

describe('newCustomerId', () => {
  it('derives a c_ id from the message and index', () => {
    const id = newCustomerId('req-1', 0);
    expect(id).toMatch(/^c_[0-9a-f]{24}$/);
    // The Redis Function derives the same id: 'c_' .. first 24 hex digits of sha1(seed).
    expect(id).toBe(`c_${createHash('sha1').update('req-1:0').digest('hex').slice(0, 24)}`);
    expect(newCustomerId('req-1', 0)).toBe(id);
    expect(newCustomerId('req-1', 1)).not.toBe(id);
    expect(newCustomerId('req-2', 0)).not.toBe(id);
  });
});
