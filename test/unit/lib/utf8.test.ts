import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import t from 'tap';
import { invalidUtf8Offset } from '../../../src/lib/utf8.js';

/** The reference: a bad sequence starts where the longest well-formed prefix ends. */
function reference(bytes: Uint8Array): number {
  if (isUtf8(bytes)) return -1;
  for (let k = bytes.length - 1; k >= 0; k--) if (isUtf8(bytes.subarray(0, k))) return k;
  return 0;
}

t.test('the offset of the first malformed sequence, for the forms RFC 3629 forbids', async (t) => {
  const cases: Array<[string, number[], number]> = [
    ['valid ASCII', [0x61, 0x62], -1],
    ['valid 2, 3 and 4 bytes', [0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80], -1],
    ['a lone continuation byte', [0x61, 0x80, 0x62], 1],
    ['0xff', [0x61, 0x62, 0xff], 2],
    ['overlong 2-byte (C0 80)', [0x61, 0xc0, 0x80], 1],
    ['overlong 3-byte (E0 80 80)', [0xe0, 0x80, 0x80], 0],
    ['a surrogate (ED A0 80)', [0x61, 0xed, 0xa0, 0x80], 1],
    ['past U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80], 0],
    ['cut short at the end', [0x61, 0x62, 0xe2, 0x82], 2],
    ['a bad continuation', [0xe2, 0x41, 0x42], 0],
  ];
  for (const [name, bytes, offset] of cases) t.equal(invalidUtf8Offset(Uint8Array.from(bytes)), offset, name);
});

t.test("it agrees with Node's own check and names the same offset as the reference, on random bytes", async (_t) => {
  const bytes = fc.array(
    fc.oneof(
      fc.integer({ min: 0, max: 0x7f }),
      fc.integer({ min: 0x80, max: 0xff }),
      fc.constantFrom(0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0xed, 0xf4),
    ),
    { maxLength: 40 },
  );
  fc.assert(
    fc.property(bytes, (a) => {
      const u = Uint8Array.from(a);
      return invalidUtf8Offset(u) === reference(u);
    }),
    { numRuns: 20_000 },
  );
});
