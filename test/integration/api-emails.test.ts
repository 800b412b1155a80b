import t, { type Test } from 'tap';
import { readStoredRequest } from '../../src/domain/stored-request.js';
import { composeMessage } from '../../src/mime/compose.js';
import { customerId, makeDomain, makeKey, startTestServer, type TestServer } from '../helpers/env.js';
import { type HttpResult, type Json, request } from '../helpers/http.js';

let s: TestServer;
let live: string;
let sandbox: string;
let otherKey: string;

t.before(async () => {
  // Delivery is driven by hand (and never here): these tests are about accepting.
  s = await startTestServer('[limits]\nmax_message_bytes = 200000\n', { manualDelivery: true });
  live = await makeKey(s.store, 'production');
  sandbox = await makeKey(s.store, 'sandbox');
  await makeDomain(s.store, 'example.com');
  await makeDomain(s.store, 'pending.example', { verified: false });
  await customerId(s.store, 'acme');
  otherKey = await makeKey(s.store, 'production', 'acme');
  await makeDomain(s.store, 'acme.example', { customer: 'acme' });
});
t.teardown(() => s.close());

async function post(
  body: unknown,
  opts: { key?: string | null; headers?: Record<string, string>; raw?: string } = {},
): Promise<HttpResult> {
  return request(`${s.url}/api/v1/emails`, {
    method: 'POST',
    key: opts.key === undefined ? live : opts.key,
    headers: { 'content-type': 'application/json', ...opts.headers },
    ...(opts.raw !== undefined ? { raw: opts.raw } : { body }),
  });
}

/** The MIME message delivery will compose from what was stored. */
async function storedMime(messageId: string): Promise<string> {
  const row = (await s.sql.get('SELECT request, created_at FROM messages WHERE message_id = ?', messageId)) as {
    request: Buffer;
    created_at: number;
  };
  return (await composeMessage(readStoredRequest(row.request), messageId, row.created_at)).toString();
}

const valid = { from: 'Sender <hello@example.com>', to: 'alice@example.org', subject: 'Hello', text_body: 'Hi Alice' };

function isErrorShape(t: Test, body: Json, code: string): void {
  t.equal(body?.error?.code, code, `code is ${code}`);
  t.type(body?.error?.message, 'string');
  t.type(body?.error?.details, 'object');
}

t.test(
  'a valid request is accepted with 202 and the documented shape (docs/api.md), and the rows exist when the 202 arrives',
  async (t) => {
    const r = await post(valid);
    t.equal(r.status, 202);
    t.match(r.body, { status: 'queued', sandbox: false, recipients: ['alice@example.org'] });
    t.match(r.body.message_id, /^[0-9a-z]{26}@example\.com$/);
    // Durability: the message and its recipient are committed before the response is sent.
    const row = (await s.sql.get(
      'SELECT id, request, created_at FROM messages WHERE message_id = ?',
      r.body.message_id,
    )) as { id: number; request: Buffer; created_at: number };
    t.ok(row, 'message row exists on 202');
    t.ok(Buffer.isBuffer(row.request), 'stored as bytes (a BLOB: delivery reads text as the older format)');
    t.same(JSON.parse(row.request.toString('utf8')), valid, 'the request is stored as received');
    const rcpts = await s.sql.all('SELECT address, state FROM recipients WHERE message_id = ?', row.id);
    t.same(rcpts, [{ address: 'alice@example.org', state: 'queued' }]);
    const raw = await storedMime(r.body.message_id);
    t.match(raw, `Message-ID: <${r.body.message_id}>`);
    t.match(raw, /From: Sender <hello@example\.com>/);
  },
);

t.test("a Message-ID in headers is the message's; it finds the message as posthaste's id does", async (t) => {
  const own = `order-${Date.now()}.77@shop.example`;
  const r = await post({ ...valid, headers: { 'Message-ID': `<${own}>`, 'X-Order': '77' } });
  t.equal(r.status, 202);
  t.not(r.body.message_id, own, "message_id is posthaste's");
  const raw = await storedMime(r.body.message_id);
  t.equal(raw.match(/^Message-ID:/gim)?.length, 1, 'one Message-ID field');
  t.match(raw, `\r\nMessage-ID: <${own}>\r\n`, "the request's");
  t.match(raw, /^X-Order: 77\r$/m, "the request's other headers as before");
  for (const q of [own, `<${own}>`, r.body.message_id]) {
    const found = await request(`${s.url}/api/v1/emails?message_id=${encodeURIComponent(q)}`, { key: live });
    t.same(
      found.body.data.map((m: Json) => [m.message_id, m.header_message_id]),
      [[r.body.message_id, own]],
      `found by ${q}`,
    );
  }
  t.equal((await request(`${s.url}/api/v1/emails/${r.body.message_id}`, { key: live })).body.header_message_id, own);
});

t.test('several recipients as a comma list and as an array, cc and bcc; bcc stays out of the headers', async (t) => {
  const a = await post({ ...valid, to: 'a@example.org, "Doe, Jane" <b@example.org>' });
  t.equal(a.status, 202);
  t.same(a.body.recipients, ['a@example.org', 'b@example.org']);
  const b = await post({
    ...valid,
    to: ['a@example.org', 'c@example.org'],
    cc: 'd@example.org',
    bcc: ['e@example.org', 'A@example.org'],
  });
  t.equal(b.status, 202);
  t.same(
    b.body.recipients,
    ['a@example.org', 'c@example.org', 'd@example.org', 'e@example.org'],
    'duplicates (case-insensitive) collapse',
  );
  const raw = await storedMime(b.body.message_id);
  t.notMatch(raw, /^Bcc:/m);
  t.notMatch(raw, 'e@example.org');
});

t.test('a sandbox key is accepted with sandbox true', async (t) => {
  const r = await post(valid, { key: sandbox });
  t.equal(r.status, 202);
  t.equal(r.body.sandbox, true);
});

t.test('401: missing, malformed, unknown and revoked keys', async (t) => {
  for (const [what, key] of [
    ['missing', null],
    ['malformed', 'not-a-key'],
    ['wrong prefix', live.replace('ph_live_', 'ph_test_')],
    ['unknown', 'ph_live_' + 'A'.repeat(40)],
  ] as const) {
    const r = await post(valid, { key });
    t.equal(r.status, 401, what);
    isErrorShape(t, r.body, 'unauthorized');
  }
  const doomed = await makeKey(s.store, 'production');
  t.equal((await post(valid, { key: doomed })).status, 202, 'works before revocation');
  const id = (await s.store.keys.list()).find((k) => doomed.includes(k.id.slice(4)))!.id;
  await s.store.keys.revoke(id, Date.now());
  const r = await post(valid, { key: doomed });
  t.equal(r.status, 401, 'revocation takes effect on the very next request');
});

t.test('the key is taken with the Bearer scheme as with Token, in any case (docs/api.md)', async (t) => {
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'Token', 'token']) {
    const headers = { authorization: `${scheme} ${live}` };
    t.equal((await post(valid, { key: null, headers })).status, 202, `${scheme}: send`);
    t.equal((await request(`${s.url}/api/v1/suppressions`, { headers })).status, 200, `${scheme}: a checked endpoint`);
  }
  const basic = await post(valid, {
    key: null,
    headers: { authorization: `Basic ${Buffer.from(`x:${live}`).toString('base64')}` },
  });
  t.equal(basic.status, 401);
  isErrorShape(t, basic.body, 'unauthorized');
  t.match(basic.body.error.message, /Bearer <API key>/, 'another scheme is told which ones are taken');
  t.equal(
    (await post(valid, { key: null, headers: { authorization: 'Bearer ph_live_' + 'A'.repeat(40) } })).status,
    401,
    'Bearer with an unknown key',
  );
});

t.test('a key revoked after it was cached gets 401 before any other answer of the send path', async (t) => {
  const doomed = await makeKey(s.store, 'production');
  t.equal(
    (await post(valid, { key: doomed })).status,
    202,
    'a first send: the new key moved the epoch, the cache catches up',
  );
  t.equal((await post(valid, { key: doomed })).status, 202, 'a second send: now cached at the current epoch');
  for (const [what, opts] of [
    ['invalid JSON', { raw: '{"from":' }],
    ['a body that fails validation', { body: { ...valid, to: 'not an address' } }],
  ] as const) {
    const r = await post('body' in opts ? opts.body : null, {
      key: doomed,
      ...('raw' in opts ? { raw: opts.raw } : {}),
    });
    t.not(r.status, 401, `${what}, before revocation: not 401`);
  }
  await s.store.keys.revoke((await s.store.keys.list()).find((k) => doomed.includes(k.id.slice(4)))!.id, Date.now());
  for (const [what, opts] of [
    ['invalid JSON', { raw: '{"from":' }],
    ['a body that fails validation', { body: { ...valid, to: 'not an address' } }],
    ['an unverified sender domain', { body: { ...valid, from: 'a@pending.example' } }],
    ['a valid request', { body: valid }],
  ] as const) {
    const r = await post('body' in opts ? opts.body : null, {
      key: doomed,
      ...('raw' in opts ? { raw: opts.raw } : {}),
    });
    t.equal(r.status, 401, what);
    isErrorShape(t, r.body, 'unauthorized');
  }
});

t.test('domain changes made by the CLI apply to the next send, in both directions', async (t) => {
  await makeDomain(s.store, 'flip.example');
  const body = { ...valid, from: 'a@flip.example' };
  const accept = async (what: string) => {
    // Twice: the first send after a change brings the API's cache to the current epoch.
    t.equal((await post(body)).status, 202, what);
    t.equal((await post(body)).status, 202, `${what} (cached)`);
  };
  await accept('verified: accepted');
  await s.sql.run("UPDATE domains SET verified_at = NULL WHERE name = 'flip.example'");
  t.equal((await post(body)).status, 403, 'unverified since: refused');
  await s.sql.run('UPDATE domains SET verified_at = 1 WHERE name = ?', 'flip.example');
  await accept('verified again: accepted');
  await s.sql.run("DELETE FROM domains WHERE name = 'flip.example'");
  t.equal((await post(body)).status, 422, 'removed: not a domain of this account');
});

t.test('400 invalid_json: not JSON, and JSON that is not an object', async (t) => {
  for (const raw of ['{"from":', 'hello', '[1,2]', '"str"', 'null', '42']) {
    const r = await post(null, { raw });
    t.equal(r.status, 400, raw);
    isErrorShape(t, r.body, 'invalid_json');
  }
});

t.test('400 invalid_json says where the body stops being JSON and what was expected there', async (t) => {
  const raw = '{\n  "from": "a@example.com",\n  "to": "b@example.org"\n  "subject": "s"\n}';
  const r = await post(null, { raw });
  t.equal(r.status, 400);
  isErrorShape(t, r.body, 'invalid_json');
  const where = `line 4, column 3 (byte offset ${raw.indexOf('"subject"')}): expected ',' or '}' after a property value, found "\\""`;
  t.equal(r.body.error.message, `The request body is not valid JSON: ${where}.`);
  t.same(r.body.error.details, { body: [where] });
  const cut = await post(null, { raw: '{"from":"é' });
  t.match(
    cut.body.error.message,
    /line 1, column 11 \(byte offset 11\): expected a closing '"' for the string that starts at line 1, column 9, found the end of the body/,
    'offsets count bytes, columns characters',
  );
  const batch = await request(`${s.url}/api/v1/emails/batch`, { key: live, raw: '[{"from": x}]' });
  t.match(
    batch.body.error,
    { code: 'invalid_json', details: { body: [/line 1, column 11 \(byte offset 10\): expected a value/] } },
    'the batch endpoint too',
  );
});

t.test('415 unsupported_media_type for anything but application/json', async (t) => {
  for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    const r = await post(valid, { headers: { 'content-type': ct } });
    t.equal(r.status, 415, ct);
    isErrorShape(t, r.body, 'unsupported_media_type');
  }
});

t.test('403 domain_not_verified for a known but unverified sender domain', async (t) => {
  const r = await post({ ...valid, from: 'a@pending.example' });
  t.equal(r.status, 403);
  isErrorShape(t, r.body, 'domain_not_verified');
});

t.test("422 for a sender domain that is not the customer's (another customer's or unknown)", async (t) => {
  for (const from of ['a@acme.example', 'a@unknown.example']) {
    const r = await post({ ...valid, from });
    t.equal(r.status, 422, from);
    isErrorShape(t, r.body, 'validation_failed');
    t.ok(r.body.error.details.from, 'details name the field');
  }
});

// Each validation rule of docs/api.md, one request each; the field named in details.
const invalid: Array<[string, Record<string, unknown>, string]> = [
  ['from missing', { from: undefined }, 'from'],
  ['from not an address', { from: 'not an address' }, 'from'],
  ['from with CRLF', { from: 'a@example.com\r\nBcc: x@evil.example' }, 'from'],
  ['to missing', { to: undefined }, 'to'],
  ['to invalid', { to: 'alice@' }, 'to'],
  ['to with double dot', { to: 'a..b@example.org' }, 'to'],
  ['to with LF in display name', { to: 'Eve\n <e@example.org>' }, 'to'],
  ['to of wrong type', { to: 42 }, 'to'],
  ['cc invalid', { cc: ['ok@example.org', 'bad@@example.org'] }, 'cc'],
  ['bcc invalid', { bcc: 'x@-bad-.example' }, 'bcc'],
  ['too many recipients', { to: Array.from({ length: 51 }, (_, i) => `r${i}@example.org`) }, 'to'],
  ['reply_to invalid', { reply_to: 'nope' }, 'reply_to'],
  ['subject missing', { subject: undefined }, 'subject'],
  ['subject blank', { subject: '   ' }, 'subject'],
  ['subject with CRLF', { subject: 'Hi\r\nBcc: x@evil.example' }, 'subject'],
  ['no body at all', { text_body: undefined }, 'body'],
  ['body and text_body differ', { body: 'one', text_body: 'two' }, 'text_body'],
  [
    'attachment filename empty',
    { attachments: [{ filename: '', io: 'aGk=', content_type: 'text/plain' }] },
    'attachments[0].filename',
  ],
  [
    'attachment io not base64',
    { attachments: [{ filename: 'a.txt', io: 'not base64!', content_type: 'text/plain' }] },
    'attachments[0].io',
  ],
  [
    'attachment io unpadded',
    { attachments: [{ filename: 'a.txt', io: 'aGk', content_type: 'text/plain' }] },
    'attachments[0].io',
  ],
  [
    'attachment content_type bad',
    { attachments: [{ filename: 'a.txt', io: 'aGk=', content_type: 'pdf' }] },
    'attachments[0].content_type',
  ],
  [
    'attachment path smuggled',
    { attachments: [{ filename: 'a.txt', io: 'aGk=', content_type: 'text/plain', path: '/etc/passwd' }] },
    'attachments[0].path',
  ],
  ['owned header', { headers: { Date: 'Mon, 23 Nov 2026 10:00:00 +0000' } }, 'headers.Date'],
  ['Message-ID without angle brackets', { headers: { 'Message-ID': 'x@y' } }, 'headers.Message-ID'],
  ['Message-ID of two ids', { headers: { 'message-id': '<x@y> <z@y>' } }, 'headers.message-id'],
  ['Message-ID twice', { headers: { 'Message-ID': '<x@y>', 'message-id': '<z@y>' } }, 'headers.message-id'],
  ['content-* header', { headers: { 'Content-Type': 'text/html' } }, 'headers.Content-Type'],
  ['header value with CRLF', { headers: { 'X-Tag': 'a\r\nBcc: x@evil.example' } }, 'headers.X-Tag'],
  ['header name invalid', { headers: { 'X Bad:': 'v' } }, 'headers.X Bad:'],
  ['metadata not strings', { metadata: { n: 1 } }, 'metadata.n'],
  ['unknown field', { html: '<p>typo</p>' }, 'html'],
];

t.test('422 validation_failed for each rule, with details naming the field', async (t) => {
  for (const [name, patch, field] of invalid) {
    const body: Record<string, unknown> = { ...valid, ...patch };
    for (const k of Object.keys(patch)) if (patch[k] === undefined) delete body[k];
    const r = await post(body);
    t.equal(r.status, 422, name);
    isErrorShape(t, r.body, 'validation_failed');
    t.ok(r.body.error.details[field], `${name}: details.${field} present (got ${Object.keys(r.body.error.details)})`);
  }
});

t.test('all problems are reported at once, and a rejected request changes nothing', async (t) => {
  const before = ((await s.sql.get('SELECT COUNT(*) AS n FROM messages')) as { n: number }).n;
  const r = await post({ from: 'bad', to: 'also bad', subject: '', body: 'x' });
  t.equal(r.status, 422);
  t.same(Object.keys(r.body.error.details).sort(), ['from', 'subject', 'to']);
  const after = ((await s.sql.get('SELECT COUNT(*) AS n FROM messages')) as { n: number }).n;
  t.equal(after, before);
});

t.test('413 payload_too_large: request body over the limit, and encoded message over the limit', async (t) => {
  const huge = await post({ ...valid, text_body: 'x'.repeat(600_000) });
  t.equal(huge.status, 413, 'request body over the limit');
  isErrorShape(t, huge.body, 'payload_too_large');
  // ~180 KB of attachment: the request fits (4/3 + slack) but the encoded message exceeds 200000 bytes.
  const io = Buffer.alloc(180_000, 7).toString('base64');
  const big = await post({
    ...valid,
    attachments: [{ filename: 'a.bin', io, content_type: 'application/octet-stream' }],
  });
  t.equal(big.status, 413, 'encoded message over max_message_bytes');
  isErrorShape(t, big.body, 'payload_too_large');
});

t.test('422 recipient_suppressed names each suppressed address under its field, and queues nothing', async (t) => {
  await s.store.suppressions.add({
    customerId: await customerId(s.store),
    address: 'Gone@Example.org',
    reason: 'hard_bounce',
    now: Date.now(),
  });
  const before = ((await s.sql.get('SELECT COUNT(*) AS n FROM messages')) as { n: number }).n;
  const r = await post({ ...valid, to: ['ok@example.org'], cc: 'gone@example.org' });
  t.equal(r.status, 422);
  isErrorShape(t, r.body, 'recipient_suppressed');
  t.match(r.body.error.details.cc[0], /gone@example\.org.*hard_bounce/);
  t.notOk(r.body.error.details.to);
  t.equal(((await s.sql.get('SELECT COUNT(*) AS n FROM messages')) as { n: number }).n, before);
  // Suppression lists are per customer: acme may still send to that address.
  const other = await post({ ...valid, from: 'x@acme.example', to: 'gone@example.org' }, { key: otherKey });
  t.equal(other.status, 202);
});

t.test('Idempotency-Key: a retry returns the first response; another body is 409', async (t) => {
  const headers = { 'idempotency-key': 'order-1234' };
  const first = await post(valid, { headers });
  const second = await post(valid, { headers });
  t.equal(first.status, 202);
  t.equal(second.status, 202);
  t.same(second.body, first.body, 'same response, same message_id');
  t.equal(second.headers.get('idempotent-replayed'), 'true');
  const n = (
    (await s.sql.get('SELECT COUNT(*) AS n FROM messages WHERE message_id = ?', first.body.message_id)) as { n: number }
  ).n;
  t.equal(n, 1);
  const conflict = await post({ ...valid, subject: 'Different' }, { headers });
  t.equal(conflict.status, 409);
  isErrorShape(t, conflict.body, 'conflict');
  // Keys are per customer: acme's same key is its own.
  const acme = await post({ ...valid, from: 'x@acme.example' }, { key: otherKey, headers });
  t.equal(acme.status, 202);
  t.not(acme.body.message_id, first.body.message_id);
  // Concurrent retries of one key still send once.
  const race = await Promise.all(
    Array.from({ length: 5 }, () => post(valid, { headers: { 'idempotency-key': 'race-1' } })),
  );
  t.same(new Set(race.map((r) => r.body.message_id)).size, 1);
  const bad = await post(valid, { headers: { 'idempotency-key': 'x'.repeat(256) } });
  t.equal(bad.status, 422);
});

t.test('GET /api/v1/emails/:id shows the message to its customer only; 404 otherwise', async (t) => {
  const r = await post({ ...valid, to: ['one@example.org', 'two@example.org'], metadata: { order: '42' } });
  const get = async (id: string, key: string) => {
    const res = await fetch(`${s.url}/api/v1/emails/${encodeURIComponent(id)}`, {
      headers: { authorization: `Token ${key}` },
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const mine = await get(r.body.message_id, live);
  t.equal(mine.status, 200);
  t.match(mine.body, {
    message_id: r.body.message_id,
    from: 'Sender <hello@example.com>',
    subject: 'Hello',
    sandbox: false,
    metadata: { order: '42' },
  });
  t.same(
    mine.body.recipients.map((x: { address: string; state: string }) => [x.address, x.state]),
    [
      ['one@example.org', 'queued'],
      ['two@example.org', 'queued'],
    ],
  );
  t.type(mine.body.email_id, 'number');
  const theirs = await get(r.body.message_id, otherKey);
  t.equal(theirs.status, 404, "another customer's key cannot read it");
  isErrorShape(t, theirs.body, 'not_found');
  t.equal((await get('nope@example.com', live)).status, 404);
});

t.test('healthz answers without a key', async (t) => {
  const res = await fetch(`${s.url}/healthz`);
  t.equal(res.status, 200);
  t.match(await res.json(), { status: 'ok' });
});

t.test('unknown routes are 404 in the error shape', async (t) => {
  const res = await fetch(`${s.url}/api/v1/nothing`, { headers: { authorization: `Token ${live}` } });
  t.equal(res.status, 404);
  isErrorShape(t, (await res.json()) as Json, 'not_found');
});
