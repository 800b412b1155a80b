// mailauth parses the PEM private key on every signature (crypto.createPrivateKey: measured at
// about a quarter of the signing thread's CPU). Its signer takes `getPrivateKey` from its tools
// module when it loads, so memoising that export before the signer is imported removes the
// repeated parse. Imported first by dkim.ts. If a mailauth release renames the function, this is a
// no-op and signing still works (the delivery tests verify every signature).
import { createRequire } from 'node:module';
import type { KeyObject } from 'node:crypto';

const require = createRequire(import.meta.url);
const tools = require('mailauth/lib/tools.js') as { getPrivateKey?: (key: string | Buffer) => KeyObject };
const original = tools.getPrivateKey;
if (typeof original === 'function') {
  const cache = new Map<string, KeyObject>();
  tools.getPrivateKey = (key: string | Buffer): KeyObject => {
    const k = typeof key === 'string' ? key : key.toString('latin1');
    let hit = cache.get(k);
    if (!hit) {
      hit = original(key);
      if (cache.size > 1000) cache.clear();
      cache.set(k, hit);
    }
    return hit;
  };
}
