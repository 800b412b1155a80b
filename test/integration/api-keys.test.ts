import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { fullGrant, type KeyGrant } from '../../src/domain/key-scopes.js';
import { enforceContract } from '../helpers/contract.js';
import { customerId, makeDomain, startTestServer, type TestServer } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { expectError, type HttpResult, type Json, request } from '../helpers/http.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { submissionToml } from '../helpers/submission.js';

// The keys API (docs/api.md, "Keys and scopes"): the secret shown once, no key made with more than
// its maker has, no key revoking itself, the last use shown; and allowed_cidrs, from the peer or
// from a proxy of api.trusted_proxies (127.0.0.2 here), never from a header another peer sends.

const s: TestServer = await startTestServer(submissionToml(), {
  manualDelivery: true,
  api: 'trusted_proxies = ["127.0.0.2"]\n',
});
t.teardown(() => s.close());
const cid = await customerId(s.store);
await makeDomain(s.store, 'example.com');
const ca = readFileSync(fixturePath('tls/ca.pem'));

async function keyWith(grant: Partial<KeyGrant> & Pick<KeyGrant, 'scopes'>): Promise<{ id: string; key: string }> {
  return s.store.keys.create({
    grant: { from_domains: null, allowed_cidrs: null, ...grant },
    customerId: cid,
    kind: 'production',
    name: 'k',
    now: Date.now(),
  });
}

const keysUrl = `${s.url}/api/v1/keys`;
const message = { from: 'a@example.com', to: 'someone@elsewhere.example', subject: 's', text_body: 'b' };

t.test('a key is made with its scopes chosen, its secret shown once; listed with scopes and last use', async (t) => {
  const admin = await keyWith({ scopes: ['keys:write', 'send', 'emails:read'] });
  expectError(
    t,
    await request(keysUrl, { key: admin.key, body: { name: 'x' } }),
    422,
    'validation_failed',
    'no scopes',
  );
  const none = await request(keysUrl, { key: admin.key, body: { scopes: [] } });
  expectError(t, none, 422, 'validation_failed', 'empty scopes');
  t.match(none.body.error.details.scopes[0], /full, send/, 'the error names the choices');
  const made = await request(keysUrl, { key: admin.key, body: { name: 'web app', scopes: ['send'] } });
  t.equal(made.status, 201);
  t.match(made.body, { name: 'web app', kind: 'production', scopes: ['send'], from_domains: null, last_used_at: null });
  t.match(made.body.key, /^ph_live_/);
  t.equal((await request(`${s.url}/api/v1/emails`, { key: made.body.key, body: message })).status, 202, 'it sends');
  const list = await request(keysUrl, { key: admin.key });
  t.equal(list.status, 200);
  t.notMatch(JSON.stringify(list.body), made.body.key, 'the secret is never listed');
  const row = (list.body.data as Json[]).find((k) => k.id === made.body.id);
  t.match(row, { scopes: ['send'], revoked_at: null });
  t.type(row.last_used_at, 'string', 'the last use is shown');
  t.notOk('key' in row);
});

t.test('a key cannot make a key with more than it has', async (t) => {
  const maker = await keyWith({ scopes: ['keys:write', 'send'], from_domains: ['example.com'] });
  const wider = await request(keysUrl, { key: maker.key, body: { scopes: ['send', 'emails:read'] } });
  expectError(t, wider, 422, 'validation_failed', 'a scope it lacks');
  t.match(wider.body.error.details.scopes[0], /emails:read/);
  expectError(t, await request(keysUrl, { key: maker.key, body: { scopes: ['full'] } }), 422, 'validation_failed');
  const unrestricted = await request(keysUrl, { key: maker.key, body: { scopes: ['send'], from_domains: null } });
  expectError(t, unrestricted, 422, 'validation_failed', 'a wider restriction');
  t.ok(unrestricted.body.error.details.from_domains);
  const inherits = await request(keysUrl, { key: maker.key, body: { scopes: ['send'] } });
  t.equal(inherits.status, 201);
  t.same(inherits.body.from_domains, ['example.com'], 'left out, the restriction is the maker’s');
  const fenced = await keyWith({ scopes: ['keys:write'], allowed_cidrs: ['127.0.0.0/8'] });
  const outside = await request(keysUrl, {
    key: fenced.key,
    body: { scopes: ['keys:write'], allowed_cidrs: ['0.0.0.0/0'] },
  });
  expectError(t, outside, 422, 'validation_failed');
  t.ok(outside.body.error.details.allowed_cidrs);
  const inside = await request(keysUrl, {
    key: fenced.key,
    body: { scopes: ['keys:write'], allowed_cidrs: ['127.0.0.1'] },
  });
  t.equal(inside.status, 201);
  t.same(inside.body.allowed_cidrs, ['127.0.0.1/32']);
  const sandbox = await s.store.keys.create({
    grant: fullGrant(),
    customerId: cid,
    kind: 'sandbox',
    name: 's',
    now: 1,
  });
  const prod = await request(keysUrl, { key: sandbox.key, body: { scopes: ['send'], kind: 'production' } });
  expectError(t, prod, 422, 'validation_failed', 'a sandbox key making a production key');
  t.equal((await request(keysUrl, { key: sandbox.key, body: { scopes: ['send'] } })).body.kind, 'sandbox');
});

t.test('revoking: another key yes, itself no, another customer’s not found', async (t) => {
  const admin = await keyWith({ scopes: ['keys:write'] });
  const victim = await keyWith({ scopes: ['send'] });
  const self = await request(`${keysUrl}/${admin.id}`, { method: 'DELETE', key: admin.key });
  expectError(t, self, 409, 'conflict', 'itself');
  t.equal((await request(keysUrl, { key: admin.key })).status, 200, 'and it still works');
  const gone = await request(`${keysUrl}/${victim.id}`, { method: 'DELETE', key: admin.key });
  t.equal(gone.status, 200);
  t.type(gone.body.revoked_at, 'string');
  expectError(t, await request(`${s.url}/api/v1/emails`, { key: victim.key, body: message }), 401, 'unauthorized');
  const other = await s.store.keys.create({
    grant: fullGrant(),
    customerId: await customerId(s.store, 'other'),
    kind: 'production',
    name: 'theirs',
    now: 1,
  });
  expectError(t, await request(`${keysUrl}/${other.id}`, { method: 'DELETE', key: admin.key }), 404, 'not_found');
});

/** A request from a loopback address of our choosing, with headers of our choosing, checked against the document. */
function from(localAddress: string, key: string, headers: Record<string, string> = {}): Promise<HttpResult> {
  const url = new URL(`${s.url}/api/v1/emails`);
  const body = JSON.stringify(message);
  const requestHeaders = { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers };
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', localAddress, headers: requestHeaders },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          const h = new Headers(res.headers as Record<string, string>);
          enforceContract({
            method: 'POST',
            url: url.href,
            requestBody: body,
            requestHeaders,
            status: res.statusCode!,
            headers: h,
            text,
          });
          resolve({ status: res.statusCode!, body: JSON.parse(text), headers: h });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

t.test('allowed_cidrs: the peer, or what a trusted proxy forwarded; never a header from anyone else', async (t) => {
  const local = await keyWith({ scopes: ['send'], allowed_cidrs: ['127.0.0.1/32'] });
  t.equal((await from('127.0.0.1', local.key)).status, 202, 'from an allowed address');
  const far = await from('127.0.0.3', local.key);
  expectError(t, far, 403, 'forbidden', 'from another address');
  t.match(far.body.error.details.client_address[0], /127\.0\.0\.3/);
  const remote = await keyWith({ scopes: ['send'], allowed_cidrs: ['198.51.100.0/24'] });
  expectError(t, await from('127.0.0.1', remote.key), 403, 'forbidden', 'the peer is not in it');
  const proxied = await from('127.0.0.2', remote.key, { 'x-forwarded-for': '198.51.100.7' });
  t.equal(proxied.status, 202, 'behind the trusted proxy: the forwarded address');
  const spoofed = await from('127.0.0.3', remote.key, { 'x-forwarded-for': '198.51.100.7' });
  expectError(t, spoofed, 403, 'forbidden', 'the same header from an untrusted peer');
  const prepended = await from('127.0.0.2', remote.key, { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' });
  expectError(t, prepended, 403, 'forbidden', 'what the client wrote before the proxy’s own entry');
  // Every route, not only the send: the check is the key's.
  const reader = await keyWith({ scopes: ['emails:read'], allowed_cidrs: ['198.51.100.0/24'] });
  expectError(t, await request(`${s.url}/api/v1/emails`, { key: reader.key }), 403, 'forbidden', 'a read');
});

t.test('allowed_cidrs on SMTP submission: the connecting address, refused at AUTH', async (t) => {
  const local = await keyWith({ scopes: ['send'], allowed_cidrs: ['127.0.0.1/32'] });
  const port = s.daemon.submission['submission.listen']!.port;
  for (const [address, reply] of [
    ['127.0.0.1', /^235 /],
    ['127.0.0.3', /^535 5\.7\.8 /],
  ] as const) {
    const c = await RawSmtp.connect(port, '127.0.0.1', address);
    await c.cmd('EHLO app.test');
    await c.startTls({ ca, servername: 'localhost' });
    await c.cmd('EHLO app.test');
    t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0u\0${local.key}`).toString('base64')}`), reply, address);
    c.close();
  }
});
