// The send request as the document states it (components.schemas.SendRequest) and as the server
// judges it (validateSendRequest, domain/send-request.ts) agree: on a table of requests at each
// limit, on random values of every field a pattern describes, and never does the schema refuse a
// request the server takes. What JSON Schema cannot say is listed, and checked to be still so.

import fc from 'fast-check';
import t from 'tap';
import { openApiDocument } from '../../../src/api/openapi/document.js';
import { OWNED_HEADERS } from '../../../src/api/openapi/send.js';
import { Problems } from '../../../src/domain/errors.js';
import { validateSendRequest } from '../../../src/domain/send-request.js';
import { Contract } from '../../helpers/contract.js';

const schema = new Contract(openApiDocument()).validator(['components', 'schemas', 'SendRequest']);
const server = (body: Record<string, unknown>) =>
  !(validateSendRequest(body, { maxRecipients: 50 }) instanceof Problems);
const base = { from: 'Shop <a@example.com>', to: 'b@example.org', subject: 'Hello', text_body: 'Hi' };
const words = (n: number) => 'word '.repeat(Math.ceil(n / 5)).slice(0, n - 1) + 'x';
const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
const attachment = (a: Record<string, unknown>) => ({
  attachments: [{ filename: 'a.txt', io: 'aGk=', content_type: 'text/plain', ...a }],
});

const TABLE: Array<[string, Record<string, unknown>]> = [
  ['the base request', {}],
  ['subject of 998 characters', { subject: words(998) }],
  ['subject of 999 characters', { subject: words(999) }],
  ['blank subject', { subject: ' \t ' }],
  ['subject with a tab', { subject: 'a\tb' }],
  ['subject with LF', { subject: 'a\nb' }],
  ['subject with NEL', { subject: 'a\u0085b' }],
  ['subject null', { subject: null }],
  ['an unknown field', { html: '<p>' }],
  ['no body at all', { text_body: undefined }],
  ['html_body only', { text_body: undefined, html_body: '<p>hi</p>' }],
  ['body null and nothing else', { text_body: undefined, body: null }],
  ['a body with NUL', { text_body: 'a\u0000b' }],
  ['cc and bcc null, reply_to null', { cc: null, bcc: null, reply_to: null }],
  ['to null', { to: null }],
  ['to an empty array', { to: [] }],
  ['to an empty string', { to: '' }],
  ['to an array of two', { to: ['b@example.org', 'C <c@example.org>'] }],
  ['to a number', { to: 5 }],
  ['from missing', { from: undefined }],
  ['an attachment', attachment({})],
  ['a file name of 255', attachment({ filename: 'f'.repeat(255) })],
  ['a file name of 256', attachment({ filename: 'f'.repeat(256) })],
  ['a blank file name', attachment({ filename: '  ' })],
  ['io not Base64', attachment({ io: 'a b=' })],
  ['content_type without subtype', attachment({ content_type: 'text' })],
  ['content_type with a parameter', attachment({ content_type: 'text/plain; charset=utf-8' })],
  ['an attachment field unknown', attachment({ size: 3 })],
  ['an attachment without io', { attachments: [{ filename: 'a', content_type: 'text/plain' }] }],
  ['attachments null', { attachments: null }],
  ['a custom header', { headers: { 'X-Order': '1234' } }],
  ['header Subject', { headers: { Subject: 'x' } }],
  ['header mime-version', { headers: { 'mime-version': '1.0' } }],
  ['header CONTENT-Foo', { headers: { 'CONTENT-Foo': 'x' } }],
  ['header Contentx', { headers: { Contentx: 'x' } }],
  ['header name with a colon', { headers: { 'X:Y': 'x' } }],
  ['header name of 100', { headers: { ['X'.repeat(100)]: 'x' } }],
  ['header name of 101', { headers: { ['X'.repeat(101)]: 'x' } }],
  ['header value of 8192', { headers: { 'X-A': words(8192) } }],
  ['header value of 8193', { headers: { 'X-A': words(8193) } }],
  ['header value with CR', { headers: { 'X-A': 'a\rb' } }],
  ['header value a number', { headers: { 'X-A': 1 } }],
  ['headers an array', { headers: ['X-A'] }],
  ['metadata of 50 keys', { metadata: keys(50) }],
  ['metadata of 51 keys', { metadata: keys(51) }],
  ['a metadata key of 64', { metadata: { ['k'.repeat(64)]: 'v' } }],
  ['a metadata key of 65', { metadata: { ['k'.repeat(65)]: 'v' } }],
  ['an empty metadata key', { metadata: { '': 'v' } }],
  ['a metadata value of 1024', { metadata: { k: 'v'.repeat(1024) } }],
  ['a metadata value of 1025', { metadata: { k: 'v'.repeat(1025) } }],
  ['a metadata value not a string', { metadata: { k: 1 } }],
  ['scheduled_at with Z', { scheduled_at: '2026-11-24T09:00:00Z' }],
  ['scheduled_at in lower case, minutes only, an offset', { scheduled_at: '2026-11-24t09:00+01:00' }],
  ['scheduled_at with nanoseconds', { scheduled_at: '2026-11-24T09:00:00.123456789z' }],
  ['scheduled_at without a zone', { scheduled_at: '2026-11-24T09:00:00' }],
  ['scheduled_at a date', { scheduled_at: '2026-11-24' }],
  ['scheduled_at a number', { scheduled_at: 1_800_000_000_000 }],
  ['ten tags, one twice', { tags: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'a'] }],
  ['eleven tags', { tags: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k'] }],
  ['a tag of 100', { tags: ['t'.repeat(100)] }],
  ['a tag of 101', { tags: ['t'.repeat(101)] }],
  ['an empty tag', { tags: [''] }],
  ['a tag with a tab', { tags: ['a\tb'] }],
  ['tags a string', { tags: 'a' }],
];

t.test('the schema and the server agree on a table of requests at each limit', async (t) => {
  for (const [name, patch] of TABLE) {
    const body = JSON.parse(JSON.stringify({ ...base, ...patch })) as Record<string, unknown>;
    t.equal(schema(body), server(body), `${name}: ${server(body) ? 'taken' : 'refused'} by both`);
  }
});

/** Rules JSON Schema cannot state: the descriptions do. The schema takes these, the server refuses them. */
const GAPS: Array<[string, Record<string, unknown>]> = [
  ['an address that is not one (address syntax)', { to: 'not an address' }],
  [
    '51 recipients in to and cc together (a count across fields)',
    {
      to: Array.from({ length: 30 }, (_, i) => `t${i}@example.org`),
      cc: Array.from({ length: 21 }, (_, i) => `c${i}@example.org`),
    },
  ],
  ['a word of 995 characters in the subject (header folding)', { subject: 'x'.repeat(995) }],
  ['Base64 whose length is not a multiple of four', attachment({ io: 'aGk' })],
  ['a month that does not exist', { scheduled_at: '2026-13-01T09:00:00Z' }],
  ['body and text_body different', { body: 'a', text_body: 'b' }],
  ['a subject of 500 emoji (1000 UTF-16 code units, 500 characters)', { subject: '😀'.repeat(500) }],
];

t.test('what the schema cannot say is still so (the descriptions say it)', async (t) => {
  for (const [name, patch] of GAPS) {
    const body = { ...base, ...patch };
    t.same([schema(body), server(body)], [true, false], name);
  }
});

const chars = (s: string) => fc.string({ unit: fc.constantFrom(...s), maxLength: 24 });
/** Printable ASCII, the controls that matter, non-ASCII of the BMP, whitespace. */
const TEXT = 'aZ0 \t\n\r\u0000\u000b\u007f\u0085\u00a0é☃:;/-+=._"<>@,';

t.test('on random values the schema and the server agree, field by field', async (t) => {
  const agree = (patch: Record<string, unknown>) => schema({ ...base, ...patch }) === server({ ...base, ...patch });
  fc.assert(
    fc.property(chars(TEXT), (s) => agree({ subject: s })),
    { numRuns: 400 },
  );
  fc.assert(
    fc.property(chars(TEXT), (s) => agree(attachment({ filename: s }))),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(chars('aZ09!#$&^_.+-/; =*'), (s) => agree(attachment({ content_type: s }))),
    { numRuns: 400 },
  );
  fc.assert(
    fc.property(chars(TEXT), (s) => agree({ tags: [s] })),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(chars(TEXT), (s) => agree({ headers: { 'X-A': s } })),
    { numRuns: 300 },
  );
  const headerName = fc.oneof(
    fc.mixedCase(fc.constantFrom(...OWNED_HEADERS, 'content-type', 'content-x', 'x-order', 'contentx')),
    chars('aZ-:_ é\t!~'),
  );
  fc.assert(
    fc.property(headerName, (name) => agree({ headers: { [name]: 'v' } })),
    { numRuns: 400 },
  );
  const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
  const time = fc
    .tuple(
      fc.constantFrom('2026', '1999', '12345'),
      fc.integer({ min: 1, max: 12 }).map((n) => String(n).padStart(2, '0')),
      fc.integer({ min: 1, max: 28 }).map((n) => String(n).padStart(2, '0')),
      fc.constantFrom('T', 't', ' ', ''),
      two(23),
      two(59),
      fc.constantFrom('', ':00', ':59', ':5'),
      fc.constantFrom('', '.1', '.123456789', '.1234567890'),
      fc.constantFrom('Z', 'z', '+01:00', '-11:30', '+0100', '', '+1:00'),
    )
    .map(([y, mo, d, sep, h, mi, s, f, z]) => `${y}-${mo}-${d}${sep}${h}:${mi}${s}${s ? f : ''}${z}`);
  fc.assert(
    fc.property(time, (s) => agree({ scheduled_at: s })),
    { numRuns: 400 },
  );
  t.pass('every property held');
});

t.test('the schema never refuses a request the server takes', async (t) => {
  const field = fc.constantFrom(
    'from',
    'to',
    'cc',
    'bcc',
    'reply_to',
    'subject',
    'body',
    'text_body',
    'html_body',
    'headers',
    'metadata',
    'attachments',
    'scheduled_at',
    'tags',
    'x',
  );
  let taken = 0;
  fc.assert(
    fc.property(fc.dictionary(field, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }), (patch) => {
      const body = { ...base, ...patch };
      if (!server(body)) return true;
      taken++;
      return schema(body);
    }),
    { numRuns: 2000 },
  );
  t.ok(taken > 50, `${taken} random requests the server took, every one of them valid by the schema`);
});
