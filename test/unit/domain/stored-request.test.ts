import t from 'tap';
import { Problems, UnsendableMessage } from '../../../src/domain/errors.js';
import { type SendRequest, validateSendRequest } from '../../../src/domain/send-request.js';
import { readStoredRequest } from '../../../src/domain/stored-request.js';

const bytes = (body: unknown) => new Uint8Array(Buffer.from(JSON.stringify(body)));

function validated(body: Record<string, unknown>): SendRequest {
  const r = validateSendRequest(body, { maxRecipients: 50 });
  if (r instanceof Problems) throw new Error(JSON.stringify(r.details));
  return r;
}

const base = { from: 'a@example.com', to: 'b@example.org', subject: 's', text_body: 'x' };

// Valid bodies of every shape validation accepts: the reader must build the very same request.
const valid: Array<[string, Record<string, unknown>]> = [
  ['the smallest', base],
  [
    'display names, quoted with escapes, upper-case domains',
    { ...base, from: '"Shop, \\"The\\" One" <Orders@EXAMPLE.com>', to: ['  Bob <b@Example.ORG> ', 'c@example.org'] },
  ],
  [
    'a list in one string, duplicates across to, cc and bcc',
    {
      ...base,
      to: 'b@example.org, "B, again" <B@example.org>',
      cc: 'c@example.org, b@EXAMPLE.org',
      bcc: ['d@example.org', 'C@example.org'],
    },
  ],
  ['an internationalised domain', { ...base, from: 'Jürgen <j@bücher.example>', to: 'x@mañana.example' }],
  [
    'body as alias, line endings normalised',
    { ...base, text_body: undefined, body: 'one\ntwo\rthree\r\nfour', html_body: '<p>a</p>\n<p>b</p>' },
  ],
  ['both aliases, equal', { ...base, body: 'same', text_body: 'same' }],
  ['html only', { from: base.from, to: base.to, subject: 's', html_body: '<b>x</b>' }],
  [
    'reply-to, nulls for optional fields',
    {
      ...base,
      reply_to: 'Help <help@example.com>',
      cc: null,
      bcc: null,
      attachments: null,
      headers: null,
      metadata: null,
      tags: null,
    },
  ],
  [
    'attachments, media type case',
    {
      ...base,
      attachments: [
        { filename: 'a.pdf', io: 'AAEC', content_type: 'Application/PDF' },
        { filename: 'b', io: '', content_type: 'text/plain' },
      ],
    },
  ],
  [
    'headers and metadata, a key named __proto__',
    {
      ...base,
      headers: { 'X-Campaign': 'c1', 'List-Unsubscribe': '<mailto:u@example.com>' },
      metadata: JSON.parse('{"__proto__":"p","k":"v"}'),
    },
  ],
  ['scheduled, tags with a duplicate', { ...base, scheduled_at: '2026-11-24T09:00:00+01:00', tags: ['a', 'b', 'a'] }],
];

t.test('for every valid body, the stored reader builds what validation built at acceptance', async (t) => {
  for (const [name, body] of valid) {
    const clean = JSON.parse(JSON.stringify(body)) as Record<string, unknown>; // as stored: undefined fields gone
    t.same(readStoredRequest(bytes(clean)), validated(clean), name);
  }
  const meta = readStoredRequest(bytes(valid[9]![1]));
  t.equal(Object.getPrototypeOf(meta.metadata), null, 'metadata keys are data, never a prototype');
  t.equal(Object.getOwnPropertyDescriptor(meta.metadata, '__proto__')?.value, 'p', 'stored as a key');
});

t.test('a body accepted under older or looser rules is read as it is, not judged again', async (t) => {
  // Each of these breaks a rule in force today; queued, scheduled or held across an upgrade that
  // tightened it, the message must still be composed as the customer sent it.
  const cases: Array<[string, Record<string, unknown>, (r: SendRequest) => unknown, unknown]> = [
    [
      "more recipients than today's limit",
      { ...base, to: Array.from({ length: 60 }, (_, i) => `r${i}@example.org`) },
      (r) => r.to.length,
      60,
    ],
    ["a subject longer than today's limit", { ...base, subject: 'x'.repeat(2000) }, (r) => r.subject.length, 2000],
    [
      'a header posthaste now writes itself',
      { ...base, headers: { Sender: 's@example.com' } },
      (r) => r.headers,
      [['Sender', 's@example.com']],
    ],
    [
      "a display name longer than today's limit",
      { ...base, from: `"${'n'.repeat(400)}" <a@example.com>` },
      (r) => r.from.name?.length,
      400,
    ],
    [
      "more tags than today's limit",
      { ...base, tags: Array.from({ length: 15 }, (_, i) => `t${i}`) },
      (r) => r.tags.length,
      15,
    ],
    [
      "more metadata keys than today's limit",
      { ...base, metadata: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, 'v'])) },
      (r) => Object.keys(r.metadata).length,
      60,
    ],
    ['an unknown field', { ...base, track_opens: true }, (r) => r.subject, 's'],
  ];
  for (const [name, body, pick, expected] of cases) {
    t.ok(
      validateSendRequest(body, { maxRecipients: 50 }) instanceof Problems,
      `${name}: refused by today's validation`,
    );
    t.same(pick(readStoredRequest(bytes(body))), expected, `${name}: read as stored`);
  }
});

t.test('what cannot be read at all makes the message unsendable, with the reason', async (t) => {
  t.throws(
    () => readStoredRequest(new Uint8Array(Buffer.from('{not json'))),
    new UnsendableMessage('the stored request is not JSON'),
  );
  t.throws(() => readStoredRequest(bytes([1, 2])), /cannot be read: the request/);
  t.throws(() => readStoredRequest(bytes({ ...base, subject: 5 })), /cannot be read: subject/);
  t.throws(() => readStoredRequest(bytes({ ...base, from: 'nobody' })), /cannot be read: the address "nobody"/);
  t.throws(
    () => readStoredRequest(bytes({ ...base, attachments: [{ filename: 'a' }] })),
    /cannot be read: attachments/,
  );
  t.throws(() => readStoredRequest(bytes({ ...base, headers: ['X'] })), /cannot be read: headers/);
});
