import t from 'tap';
import type { PageContext } from '../../../src/dashboard/layout.js';
import { domainBody } from '../../../src/dashboard/views/domains.js';
import type { RecordCheck } from '../../../src/lib/verify-domain.js';
import type { DomainRow } from '../../../src/store/model.js';

// The domain page after "Verify now": a DNS server that gave no answer is said as such (and names
// dns.servers), never shown as a record that is missing.

const now = Date.UTC(2026, 0, 1);
const c = {
  session: { csrf: 'x', customerId: 1, user: {} },
  customer: { id: 1, name: 'default', created_at: now },
  customers: [],
  section: 'domains',
  now,
} as unknown as PageContext;
const d = { id: 1, customer_id: 1, name: 'new.example', verified_at: null, receiving: 0, created_at: now } as DomainRow;
const records = [
  { purpose: 'verification', type: 'TXT', name: '_posthaste.new.example', value: 'posthaste-verification=abc' },
  { purpose: 'dkim', type: 'TXT', name: 'posthaste._domainkey.new.example', value: 'v=DKIM1; k=rsa; p=AAAA' },
] as const;
const limits = { ratePerMinute: null, monthlyLimit: null };
const returnPath = {
  host: 'bounces.new.example',
  holds: false,
  envelope_domain: 'bounces.example.net',
  lost: 'until bounces.new.example is found, the envelope sender is on bounces.example.net',
};
const check = (
  purpose: RecordCheck['purpose'],
  name: string,
  lookup: RecordCheck['lookup'],
  seen: string[],
): RecordCheck => ({ purpose, name, expected: '', found: false, lookup, seen });
const text = (h: { toString(): string }) =>
  h
    .toString()
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ');

t.test(
  'a lookup the DNS server did not answer: a "no answer" badge with its reason, and a banner naming dns.servers',
  async (t) => {
    const why =
      'the DNS server did not answer the TXT query for _posthaste.new.example (SERVFAIL): check that 127.0.0.1:53 answers, or set dns.servers to a DNS server that does';
    const page = text(
      domainBody(
        c,
        d,
        [...records],
        limits,
        {
          verified: false,
          switchedTo: null,
          dnsError: why,
          returnPath,
          checks: [
            check('verification', '_posthaste.new.example', 'no_answer', [why]),
            check('dkim', 'posthaste._domainkey.new.example', 'no_answer', [why]),
          ],
        },
        returnPath,
      ),
    );
    t.match(page, `Not checked: ${why}.`);
    t.match(page, /no answer the DNS server did not answer/);
    t.notMatch(page, /missing/, 'nothing is called missing');
    t.notMatch(page, /seen:/);
  },
);

t.test('records the DNS answered without: "missing", with what was seen', async (t) => {
  const page = text(
    domainBody(
      c,
      d,
      [...records],
      limits,
      {
        verified: false,
        switchedTo: null,
        dnsError: null,
        returnPath,
        checks: [
          check('verification', '_posthaste.new.example', 'no_record', ['_posthaste.new.example has no TXT record']),
          check('dkim', 'posthaste._domainkey.new.example', 'no_domain', [
            'posthaste._domainkey.new.example does not exist (NXDOMAIN)',
          ]),
        ],
      },
      returnPath,
    ),
  );
  t.match(
    page,
    /Return path: not found until bounces\.new\.example is found/,
    'what is lost until the return path holds',
  );
  t.match(page, 'Not verified yet: see the records marked missing.');
  t.match(page, /missing seen: _posthaste\.new\.example has no TXT record/);
  t.notMatch(page, /no answer|dns\.servers/);
});
