import t from 'tap';
import {
  byteSize,
  exactTime,
  noun,
  plural,
  relativeTime,
  replyParts,
  shortUrl,
} from '../../../src/dashboard/format.js';

t.test('plural: the noun agrees with the count', async (t) => {
  t.equal(plural(1, 'attempt'), '1 attempt');
  t.equal(plural(2, 'attempt'), '2 attempts');
  t.equal(plural(0, 'attempt'), '0 attempts');
  t.equal(plural(1, 'delivery', 'deliveries'), '1 delivery');
  t.equal(plural(3, 'delivery', 'deliveries'), '3 deliveries');
  t.equal(noun(1, 'complaint'), 'complaint', 'the noun alone');
  t.equal(noun(4, 'recipient accepted', 'recipients accepted'), 'recipients accepted');
});

t.test('relativeTime: how long ago or ahead, in the unit that reads best', async (t) => {
  const now = Date.parse('2026-11-23T10:00:00Z');
  const S = 1000;
  const MIN = 60 * S;
  const H = 60 * MIN;
  const DAY = 24 * H;
  const cases: Array<[number, string]> = [
    [0, 'just now'],
    [-4 * S, 'just now'],
    [3 * S, 'in a moment'],
    [-40 * S, '40 s ago'],
    [-59 * S, '59 s ago'],
    [-60 * S, '1 min ago'],
    [-3 * MIN - 20 * S, '3 min ago'],
    [-59 * MIN - 40 * S, '1 h ago'],
    [2 * H - 5 * S, 'in 2 h'],
    [10 * MIN, 'in 10 min'],
    [-47 * H, '47 h ago'],
    [-48 * H, '2 days ago'],
    [-2.4 * DAY, '2 days ago'],
    [-2.6 * DAY, '3 days ago'],
    [-30 * DAY, '30 days ago'],
    [-364 * DAY, '364 days ago'],
    [-365 * DAY, '1 year ago'],
    [-800 * DAY, '2 years ago'],
    [30 * DAY, 'in 30 days'],
  ];
  for (const [d, text] of cases) t.equal(relativeTime(now + d, now), text, `${d} ms`);
});

t.test('exactTime: the UTC time to the second', async (t) => {
  t.equal(exactTime(Date.parse('2026-11-23T10:00:05.678Z')), '2026-11-23 10:00:05Z');
});

t.test('replyParts: a stored reply as a person reads it, never as JSON', async (t) => {
  t.same(
    replyParts({ code: 550, enhanced_code: '5.1.1', message: 'User unknown', classification: 'unknown_recipient' }),
    {
      status: '550 5.1.1',
      meaning: 'unknown recipient',
      text: 'User unknown',
    },
  );
  t.same(
    replyParts({ code: 250, enhanced_code: '2.0.0', message: 'OK' }),
    { status: '250 2.0.0', meaning: '', text: 'OK' },
    "a delivery's reply: no classification",
  );
  t.same(
    replyParts({ code: 250, enhanced_code: '', message: 'Ok: queued', classification: 'other' }),
    { status: '250', meaning: '', text: 'Ok: queued' },
    'nor when one is stored',
  );
  t.same(
    replyParts({ code: 451, enhanced_code: '4.3.0', message: 'try later', classification: 'other' }),
    { status: '451 4.3.0', meaning: 'unclassified', text: 'try later' },
    'a failure no rule named',
  );
  t.same(
    replyParts({ code: 0, enhanced_code: '', message: 'no MX for example.invalid', classification: 'dns_failure' }),
    { status: '', meaning: 'dns failure', text: 'no MX for example.invalid' },
    'our own failure: no code',
  );
  t.same(replyParts({ suppressed: 'hard_bounce' }), {
    status: '',
    meaning: 'suppressed',
    text: 'Not sent: the address is on the suppression list (hard bounce).',
  });
  for (const v of [null, undefined, 'text', 42, [], {}, { other: 1 }])
    t.equal(replyParts(v), undefined, JSON.stringify(v) ?? 'undefined');
});

t.test('shortUrl: host and the end of the path kept, the middle cut', async (t) => {
  t.equal(shortUrl('https://hooks.example.com/posthaste'), 'hooks.example.com/posthaste', 'https:// is implied');
  t.equal(shortUrl('http://127.0.0.1:8080/hook'), 'http://127.0.0.1:8080/hook', 'http:// is worth seeing');
  const long = `https://hooks.example.com/${'a'.repeat(100)}/events?x=1`;
  const short = shortUrl(long);
  t.equal(short.length, 60);
  t.match(short, /^hooks\.example\.com\/a+…a+\/events\?x=1$/);
  t.equal(shortUrl(long, 20).length, 20);
});

t.test('byteSize: bytes, then KiB, MiB, GiB', async (t) => {
  t.equal(byteSize(1), '1 byte');
  t.equal(byteSize(512), '512 bytes');
  t.equal(byteSize(1536), '1.5 KiB');
  t.equal(byteSize(10 * 1024), '10 KiB');
  t.equal(byteSize(25 * 1024 * 1024), '25 MiB');
  t.equal(byteSize(3 * 1024 ** 3), '3 GiB');
});
