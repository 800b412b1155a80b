import { randomBytes } from 'node:crypto';
import t from 'tap';
import { parseReturnToken, returnPath, returnToken } from '../../../src/domain/return-path.js';

const secret = randomBytes(32);

t.test('a token names its recipient and survives case folding', async (t) => {
  for (const id of [1, 42, 123_456_789, 2 ** 39]) {
    const token = returnToken(secret, id);
    t.match(token, /^[0-9a-z]{20}$/);
    t.equal(parseReturnToken(secret, token), id);
    t.equal(parseReturnToken(secret, token.toUpperCase()), id, 'upper-cased by a remote MTA');
  }
  t.match(returnPath(secret, 7, 'bounces.example.net'), /^bounces\+[0-9a-z]{20}@bounces\.example\.net$/);
  t.ok(returnPath(secret, 7, 'b.example').split('@')[0]!.length <= 64);
});

t.test('forged, altered or malformed tokens name nobody', async (t) => {
  const token = returnToken(secret, 99);
  const otherId = returnToken(secret, 100).slice(0, 8) + token.slice(8);
  t.equal(parseReturnToken(secret, otherId), undefined, 'another id with this MAC');
  t.equal(parseReturnToken(randomBytes(32), token), undefined, 'another secret');
  for (const bad of [
    '',
    'short',
    token + 'x',
    token.slice(0, -1) + (token.endsWith('0') ? '1' : '0'),
    '0'.repeat(20),
    token.replace(/./, '!'),
  ])
    t.equal(parseReturnToken(secret, bad), undefined, JSON.stringify(bad));
});
