import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Files under test/fixtures (tests run from dist/, fixtures stay in the source tree). */
export function fixturePath(rel: string): string {
  return fileURLToPath(new URL(`../../../test/fixtures/${rel}`, import.meta.url));
}

export function fixture(rel: string): Buffer {
  return readFileSync(fixturePath(rel));
}
