import { isUtf8 } from 'node:buffer';

/**
 * Where well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF)
 * first breaks: the offset of the byte that starts the bad sequence (as Python's decoder reports
 * it), or -1 when there is none. Node's `isUtf8` (SIMD) answers the common case; the byte walk
 * runs only for text already known to be bad, to say where.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  if (isUtf8(bytes)) return -1;
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // The lead byte fixes the length and the range of the second byte (RFC 3629 section 4).
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0; // overlong
      if (b === 0xed) hi = 0x9f; // surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90; // overlong
      if (b === 0xf4) hi = 0x8f; // past U+10FFFF
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (k === 1 ? c < lo || c > hi : c < 0x80 || c > 0xbf)) return i;
    }
    i += need + 1;
  }
  return -1;
}
