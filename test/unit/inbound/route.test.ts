import t from 'tap';
import { returnToken } from '../../../src/domain/return-path.js';
import { routeRecipient } from '../../../src/inbound/route.js';

// A return path on a sending domain's own host (<label>.<domain>) is taken for a token posthaste
// made, whichever domain it is on; the server's return path domain takes any token as before.

const secret = Buffer.alloc(32, 7);
const token = returnToken(secret, 42);
const ctx = {
  returnPathDomain: 'bounces.example.net',
  returnPathLabel: 'bounces',
  isReturnToken: (x: string) => x === token,
  feedbackAddress: '',
  dmarcAddress: 'dmarc@reports.example.net',
  isReceiving: () => false,
};

t.test('the token decides on a domain return path host; the domain never does', async (t) => {
  const forged = `${token.slice(0, 8)}${'z'.repeat(12)}`;
  t.same(
    [
      `bounces+${token}@bounces.shop.example`,
      `BOUNCES+${token.toUpperCase()}@Bounces.Other.Example`,
      `bounces+${forged}@bounces.shop.example`,
      `bounces+${token}@shop.example`,
      `bounces+${token}@rp.shop.example`,
      `bounces+${forged}@bounces.example.net`,
    ].map((a) => routeRecipient(a, ctx).kind),
    ['bounce', 'bounce', 'refused', 'refused', 'refused', 'bounce'],
  );
});

t.test('the DMARC report address is taken as it is configured, in any case, and nothing near it', async (t) => {
  t.same(
    ['dmarc@reports.example.net', 'DMARC@Reports.Example.Net', 'dmarc+x@reports.example.net', 'dmarc@example.net'].map(
      (a) => routeRecipient(a, ctx).kind,
    ),
    ['dmarc', 'dmarc', 'refused', 'refused'],
  );
  t.equal(routeRecipient('dmarc@reports.example.net', { ...ctx, dmarcAddress: '' }).kind, 'refused', 'unset: none');
});
