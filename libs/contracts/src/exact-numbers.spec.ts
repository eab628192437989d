import { ExactNumber, exactJson, hasLongDigitRun, keepExactNumbers } from './exact-numbers.js';
import { parseJsonBody } from './json-body.js';

describe('exact numbers in JSON (custom numbers of up to 18 digits)', () => {
  it('reads a number a double would round as its exact digits, and leaves the rest as numbers', () => {
    expect(
      parseJsonBody(
        Buffer.from('{"a":123456789012345678,"b":99999999999999.9999,"c":1.5,"d":"12345678901234567"}'),
      ),
    ).toEqual({ a: '123456789012345678', b: '99999999999999.9999', c: 1.5, d: '12345678901234567' });
    expect(keepExactNumbers('{"a":0.1000000000000000,"b":-12345678901234.5}')).toBe(
      '{"a":0.1000000000000000,"b":-12345678901234.5}',
    );
  });

  it('writes an ExactNumber as a JSON number with exactly its digits, and a sent look-alike as text', () => {
    const text = exactJson({ n: new ExactNumber('-99999999999999.9999'), s: '\u0000exact:x:1', m: 2 });
    expect(text).toBe('{"n":-99999999999999.9999,"s":"\\u0000exact:x:1","m":2}');
  });

  it('finds a run of 16 digits and points wherever it starts and whatever surrounds it', () => {
    const longRun = /[\d.]{16}/;
    for (let length = 0; length <= 40; length++)
      for (let run = 14; run <= 17; run++)
        for (let at = 0; at + run <= length; at++) {
          const text = 'a'.repeat(at) + '1.'.repeat(run).slice(0, run) + 'b'.repeat(length - at - run);
          // a shorter run before it must not hide it
          for (const prefix of ['', '12345678901234,', '"x":9,']) {
            const sample = prefix + text;
            expect([sample, hasLongDigitRun(sample)]).toEqual([sample, longRun.test(sample)]);
          }
        }
  });
});
