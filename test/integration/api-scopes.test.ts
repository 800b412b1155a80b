import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import t from 'tap';
import { SCOPES, type Scope } from '../../src/domain/key-scopes.js';
import { createLogger } from '../../src/lib/logger.js';
import { DOCUMENT_FILE } from '../helpers/contract.js';
import { customerId, makeDomain, startTestServer, type TestServer } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { submissionToml } from '../helpers/submission.js';

// Key scopes (docs/api.md, "Keys and scopes"): every API route, as the running app lists them,
// refuses a key without its scope (403 insufficient_scope naming it) and lets one with it through;
// a `send` key sends over HTTP and SMTP submission and does nothing else; from_domains holds
// behind both doors. Every answer is checked against docs/openapi.json (helpers/http.ts).

const logLines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    logLines.push(chunk.toString());
    cb();
  },
});
const s: TestServer = await startTestServer(submissionToml(), {
  manualDelivery: true,
  log: createLogger('info', sink),
});
t.teardown(() => s.close());
const cid = await customerId(s.store);
await makeDomain(s.store, 'example.com');
await makeDomain(s.store, 'other.example');
const ca = readFileSync(fixturePath('tls/ca.pem'));
const starttlsPort = s.daemon.submission['submission.listen']!.port;

async function keyWith(scopes: Scope[], extra: { from_domains?: string[] } = {}): Promise<string> {
  const grant = { scopes, from_domains: extra.from_domains ?? null, allowed_cidrs: null };
  return (
    await s.store.keys.create({ grant, customerId: cid, kind: 'production', name: scopes.join(' '), now: Date.now() })
  ).key;
}

/** A route's path with its parameters filled in (ids that name nothing: the scope is judged before the resource). */
const pathOf = (url: string): string =>
  url.replace(/:address/g, 'nobody%40example.com').replace(/:(\w+)/g, (_m, name: string) => `no_such_${name}`);

const message = (from: string) => ({ from, to: 'someone@elsewhere.example', subject: 's', text_body: 'b' });

/** A route called with a key: a body for the methods that take one. */
function call(route: { method: string; url: string }, key: string) {
  const withBody = route.method === 'POST' || route.method === 'PATCH' || route.method === 'PUT';
  return request(`${s.url}${pathOf(route.url)}`, { method: route.method, key, ...(withBody ? { body: {} } : {}) });
}

t.test('every route declares its scope, and the OpenAPI document says the same', async (t) => {
  const routes = s.daemon.apiRoutes;
  t.ok(routes.length >= 22, `${routes.length} routes under /api/`);
  t.same(
    routes.filter((r) => r.access === 'public').map((r) => r.url),
    ['/api/v1/openapi.json'],
    'only the document itself takes no key',
  );
  const doc = JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8'));
  for (const r of routes.filter((r) => r.access !== 'public')) {
    const path = r.url.replace(/:(\w+)/g, '{$1}');
    const op = doc.paths[path]?.[r.method.toLowerCase()];
    t.ok(op, `${r.method} ${path} is in the document`);
    t.same(op?.security, [{ bearer: [r.access] }, { token: [r.access] }], `${r.method} ${path}: ${r.access}`);
  }
});

t.test('route × scope: refused 403 insufficient_scope without the scope, let through with it', async (t) => {
  const keys = new Map<Scope, string>();
  for (const scope of SCOPES) keys.set(scope, await keyWith([scope]));
  for (const route of s.daemon.apiRoutes.filter((r) => r.access !== 'public')) {
    for (const scope of SCOPES) {
      const r = await call(route, keys.get(scope)!);
      const what = `${route.method} ${route.url} with ${scope}`;
      if (scope === route.access) t.not(r.status, 403, `${what}: let through (${r.status})`);
      else {
        expectError(t, r, 403, 'insufficient_scope', what);
        t.match(r.body.error.message, route.access, `${what}: the message names ${route.access}`);
        t.match(r.body.error.details.scope?.[0], route.access, `${what}: details.scope names it`);
      }
    }
  }
});

t.test('a full key passes every scope check', async (t) => {
  const full = await keyWith([...SCOPES]);
  for (const route of s.daemon.apiRoutes.filter((r) => r.access !== 'public'))
    t.not((await call(route, full)).status, 403, `${route.method} ${route.url}`);
});

/** A submission session over STARTTLS; the AUTH reply. */
async function smtpAuth(key: string): Promise<{ c: RawSmtp; auth: string }> {
  const c = await RawSmtp.connect(starttlsPort);
  await c.cmd('EHLO app.test');
  await c.startTls({ ca, servername: 'localhost' });
  await c.cmd('EHLO app.test');
  const auth = await c.cmd(`AUTH PLAIN ${Buffer.from(`\0posthaste\0${key}`).toString('base64')}`);
  return { c, auth };
}

const CRLF = (...l: string[]) => `${l.join('\r\n')}\r\n`;

t.test('a send key sends over HTTP and SMTP submission, and does nothing else', async (t) => {
  const send = await keyWith(['send']);
  const r = await request(`${s.url}/api/v1/emails`, { key: send, body: message('a@example.com') });
  t.equal(r.status, 202, 'HTTP send');
  const batch = await request(`${s.url}/api/v1/emails/batch`, { key: send, body: [message('a@example.com')] });
  t.equal(batch.status, 202, 'HTTP batch');
  const { c, auth } = await smtpAuth(send);
  t.match(auth, /^235 /, 'SMTP AUTH');
  const sent = await c.send(
    'a@example.com',
    ['x@elsewhere.example'],
    CRLF('From: a@example.com', 'Subject: s', '', 'b'),
  );
  t.match(sent.data, /^250 /, 'SMTP submission');
  c.close();
  expectError(
    t,
    await request(`${s.url}/api/v1/emails/${r.body.message_id}`, { key: send }),
    403,
    'insufficient_scope',
  );
  expectError(t, await request(`${s.url}/api/v1/emails`, { key: send }), 403, 'insufficient_scope');
  expectError(t, await request(`${s.url}/api/v1/inbound`, { key: send }), 403, 'insufficient_scope');
  expectError(t, await request(`${s.url}/api/v1/webhooks`, { key: send }), 403, 'insufficient_scope');
  expectError(t, await request(`${s.url}/api/v1/suppressions`, { key: send }), 403, 'insufficient_scope');
  expectError(t, await request(`${s.url}/api/v1/keys`, { key: send }), 403, 'insufficient_scope');
  const read = await keyWith(['emails:read']);
  t.equal(
    (await request(`${s.url}/api/v1/emails/${r.body.message_id}`, { key: read })).status,
    200,
    'read by another key',
  );
});

t.test('SMTP submission needs send: refused at AUTH with 535, the reason in the log only', async (t) => {
  const reader = await keyWith(['emails:read', 'inbound:read']);
  const { c, auth } = await smtpAuth(reader);
  t.match(auth, /^535 5\.7\.8 /);
  t.notMatch(auth, /scope|send/i, 'the reply does not say why');
  t.match(await c.cmd('MAIL FROM:<a@example.com>'), /^530 /, 'and the session is not authenticated');
  c.close();
  const line = logLines.find((l) => l.includes('AUTH refused') && l.includes('send scope'));
  t.ok(line, 'the log says why');
  t.notMatch(line ?? '', reader, 'without the key');
});

t.test('from_domains: the From domain must be one of them, over HTTP (403, details.from) and SMTP', async (t) => {
  const only = await keyWith(['send'], { from_domains: ['example.com'] });
  t.equal((await request(`${s.url}/api/v1/emails`, { key: only, body: message('a@example.com') })).status, 202);
  const refused = await request(`${s.url}/api/v1/emails`, { key: only, body: message('a@other.example') });
  expectError(t, refused, 403, 'forbidden');
  t.match(refused.body.error.details.from?.[0], /other\.example/);
  const batch = await request(`${s.url}/api/v1/emails/batch`, {
    key: only,
    body: [message('a@example.com'), message('a@other.example')],
  });
  t.equal(batch.status, 202);
  t.match((batch.body.data as Json[])[1], { error: { code: 'forbidden', details: { from: [/other\.example/] } } });
  t.ok((batch.body.data as Json[])[0].message_id, 'the other item is accepted');
  const { c, auth } = await smtpAuth(only);
  t.match(auth, /^235 /);
  const no = await c.send(
    'a@other.example',
    ['x@elsewhere.example'],
    CRLF('From: a@other.example', 'Subject: s', '', 'b'),
  );
  t.match(no.data, /^550 5\.7\.1 .*other\.example/, 'SMTP refuses it at DATA');
  const yes = await c.send(
    'a@example.com',
    ['x@elsewhere.example'],
    CRLF('From: a@example.com', 'Subject: s', '', 'b'),
  );
  t.match(yes.data, /^250 /);
  c.close();
  // Without the restriction the same key's customer sends from either.
  const any = await keyWith(['send']);
  t.equal((await request(`${s.url}/api/v1/emails`, { key: any, body: message('a@other.example') })).status, 202);
});
