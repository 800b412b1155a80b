import t from 'tap';
import {
  destinationOf,
  destinationOfHost,
  limitsFor,
  parseDestinationRules,
} from '../../../src/domain/destinations.js';

t.test('a destination is the registrable domain of the first MX host', async (t) => {
  t.equal(
    destinationOf([
      { host: 'alt1.gmail-smtp-in.l.google.com', priority: 10 },
      { host: 'gmail-smtp-in.l.google.com', priority: 5 },
    ]),
    'google.com',
  );
  t.equal(destinationOf([{ host: 'contoso-com.mail.protection.outlook.com', priority: 0 }]), 'outlook.com');
  t.equal(
    destinationOf([
      { host: 'mta7.am0.yahoodns.net', priority: 1 },
      { host: 'mta5.am0.yahoodns.net', priority: 1 },
    ]),
    'yahoodns.net',
  );
  t.equal(
    destinationOf([{ host: 'mx1.example.co.uk.', priority: 10 }]),
    'example.co.uk',
    'a multi-label public suffix, trailing dot',
  );
  t.equal(
    destinationOf([
      { host: 'b.example.net', priority: 10 },
      { host: 'a.example.org', priority: 10 },
    ]),
    'example.org',
    'equal preferences: by name, so the answer does not depend on the order DNS gave',
  );
  t.equal(destinationOf([]), null);
  t.equal(destinationOfHost('127.0.0.1'), '127.0.0.1', 'an address is its own destination');
  t.equal(destinationOfHost('LOCALHOST'), 'localhost');
});

t.test('destination_limits entries are parsed, and bad ones refused with the entry named', async (t) => {
  t.same(parseDestinationRules(['outlook.com connections=5', 'Google.com  per_minute=600 per_connection=50']), [
    { destination: 'outlook.com', limits: { connections: 5 } },
    { destination: 'google.com', limits: { perMinute: 600, perConnection: 50 } },
  ]);
  t.same(parseDestinationRules([]), []);
  for (const [bad, why] of [
    ['outlook.com', /no settings/],
    ['connections=5', /destination name/],
    ['*.google.com connections=5', /destination name/],
    ['outlook.com conns=5', /not one of/],
    ['outlook.com connections=0', /connections must be 1 to 1000/],
    ['outlook.com per_minute=-1', /not one of/],
    ['outlook.com per_connection=1.5', /not one of/],
  ] as const)
    t.throws(() => parseDestinationRules([bad]), why, bad);
  t.throws(() => parseDestinationRules(['a.com connections=1', 'A.com per_minute=3']), /named twice/);
});

t.test("a rule's settings go over the defaults; other destinations get the defaults", async (t) => {
  const defaults = { connections: 10, perConnection: 100, perMinute: 0 };
  const rules = parseDestinationRules(['outlook.com connections=5']);
  t.same(limitsFor('outlook.com', rules, defaults), { connections: 5, perConnection: 100, perMinute: 0 });
  t.same(limitsFor('google.com', rules, defaults), defaults);
});
