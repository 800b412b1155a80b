// The check request() runs on every answer under /api/v1 (test/helpers/contract.ts) finds each
// kind of mismatch: a field added or missing, a status or a media type the document does not
// give, a request the document would refuse, an undocumented route answering, and a real server's
// answer held to a document that says otherwise.

import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { ApiDeps } from '../../../src/api/deps.js';
import { openApiDocument } from '../../../src/api/openapi/document.js';
import { buildApi } from '../../../src/api/server.js';
import { loadConfig } from '../../../src/config/load.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { Contract, type Exchange } from '../../helpers/contract.js';
import { tempDir, writeTestConfig } from '../../helpers/env.js';

const contract = new Contract(openApiDocument());
const BASE = 'http://127.0.0.1:1';
const accepted = {
  message_id: '01kax0000000000000000000aa@example.com',
  status: 'queued',
  sandbox: false,
  recipients: ['b@example.org'],
};
const send = { from: 'a@example.com', to: 'b@example.org', subject: 's', text_body: 'b' };

function exchange(x: Partial<Exchange> & { body?: unknown; sent?: unknown; contentType?: string }): Exchange {
  const headers = new Headers({ 'content-type': x.contentType ?? 'application/json; charset=utf-8' });
  return {
    method: x.method ?? 'POST',
    url: x.url ?? `${BASE}/api/v1/emails`,
    requestBody: x.requestBody ?? (x.sent === undefined ? undefined : JSON.stringify(x.sent)),
    requestHeaders: x.requestHeaders ?? {},
    status: x.status ?? 202,
    headers: x.headers ?? headers,
    text: x.text ?? JSON.stringify(x.body ?? accepted),
  };
}

t.test('an answer as documented passes', async (t) => {
  t.same(contract.check(exchange({ sent: send })), []);
  t.same(
    contract.check(
      exchange({ sent: send, body: { ...accepted, status: 'scheduled', scheduled_at: '2026-11-24T09:00:00.000Z' } }),
    ),
    [],
    'scheduled',
  );
  t.same(
    contract.check(
      exchange({
        status: 422,
        body: { error: { code: 'validation_failed', message: 'm', details: { to: ['is required'] } } },
      }),
    ),
    [],
    'a 422',
  );
  t.same(
    contract.check(
      exchange({
        method: 'GET',
        url: `${BASE}/api/v1/emails?limit=5&state=bounced`,
        status: 200,
        body: { data: [], next: null },
      }),
    ),
    [],
    'a list',
  );
  t.same(
    contract.check(exchange({ method: 'HEAD', url: `${BASE}/api/v1/emails`, status: 200, text: '' })),
    [],
    'HEAD: no body to check',
  );
});

t.test('a response that differs from the document is caught', async (t) => {
  const one = (x: Exchange) => contract.check(x).join('\n');
  t.match(
    one(exchange({ sent: send, body: { ...accepted, queued_at: 'now' } })),
    /must NOT have additional properties/,
    'a field the document does not list',
  );
  const { sandbox: _s, ...withoutSandbox } = accepted;
  t.match(
    one(exchange({ sent: send, body: withoutSandbox })),
    /must have required property 'sandbox'/,
    'a field missing',
  );
  t.match(
    one(exchange({ sent: send, body: { ...accepted, status: 'sent' } })),
    /must be equal to one of the allowed values/,
    'a value outside its enum',
  );
  t.match(
    one(exchange({ sent: send, body: { ...accepted, status: 'scheduled' } })),
    /scheduled_at/,
    'scheduled without scheduled_at',
  );
  t.match(
    one(exchange({ status: 200, sent: send })),
    /status 200 is not among the documented ones/,
    'a status the operation does not give',
  );
  t.match(
    one(exchange({ status: 422, body: { error: { code: 'not_found', message: 'm', details: {} } } })),
    /allowed values/,
    'a code that does not go with its status',
  );
  t.match(
    one(exchange({ status: 401, body: { error: 'unauthorized' } })),
    /must be object/,
    'an error not in the error shape',
  );
  t.match(
    one(exchange({ sent: send, contentType: 'text/html' })),
    /content-type text\/html is not documented/,
    'a media type the document does not give',
  );
  t.match(one(exchange({ sent: send, text: 'queued' })), /not JSON/, 'a body that is not JSON');
  const replayed = new Headers({ 'content-type': 'application/json', 'idempotent-replayed': 'yes' });
  t.match(
    one(exchange({ sent: send, headers: replayed })),
    /header idempotent-replayed .* must be equal to constant/,
    'a header value the document does not give',
  );
});

t.test('a request the server took but the document would refuse is caught', async (t) => {
  const one = (x: Exchange) => contract.check(x).join('\n');
  t.match(
    one(exchange({ sent: { ...send, html: '<p>' } })),
    /request body .* must NOT have additional properties/,
    'an unknown field',
  );
  t.match(
    one(exchange({ sent: { ...send, subject: 'x'.repeat(999) } })),
    /must NOT have more than 998 characters/,
    'over a limit',
  );
  t.match(one(exchange({ requestBody: undefined })), /without the body the document requires/, 'no body');
  t.match(
    one(
      exchange({ method: 'GET', url: `${BASE}/api/v1/emails?color=red`, status: 200, body: { data: [], next: null } }),
    ),
    /query parameter color/,
    'an undocumented query parameter',
  );
  t.match(
    one(
      exchange({ method: 'GET', url: `${BASE}/api/v1/emails?limit=500`, status: 200, body: { data: [], next: null } }),
    ),
    /limit .* must be <= 100/,
    'a query value out of range',
  );
  t.match(
    one(exchange({ sent: send, requestHeaders: { 'Idempotency-Key': 'a b' } })),
    /header Idempotency-Key/,
    'a bad header',
  );
  t.match(
    one(
      exchange({
        method: 'DELETE',
        url: `${BASE}/api/v1/suppressions/x%40example.org`,
        sent: { why: 1 },
        status: 200,
        body: { address: 'x@example.org', deleted: true },
      }),
    ),
    /does not describe/,
    'a body where none is taken',
  );
  t.same(
    contract.check(
      exchange({
        sent: { ...send, html: '<p>' },
        status: 422,
        body: { error: { code: 'validation_failed', message: 'm', details: {} } },
      }),
    ),
    [],
    'a refused request is not held to the schema',
  );
});

t.test('a batch is held to the schema item by item, as the server answers it', async (t) => {
  const url = `${BASE}/api/v1/emails/batch`;
  const refused = { error: { code: 'validation_failed', message: 'm', details: { subject: ['is required'] } } };
  t.same(
    contract.check(exchange({ url, sent: [send, { to: 'x' }], body: { data: [accepted, refused] } })),
    [],
    'the refused item is not checked',
  );
  t.match(
    contract.check(exchange({ url, sent: [send, { to: 'x' }], body: { data: [accepted, accepted] } })).join('\n'),
    /request body/,
    'an item the server took that the schema refuses',
  );
  t.same(contract.check(exchange({ url, sent: [{ to: 'x' }], body: { data: [refused] } })), [], 'nothing taken');
});

t.test('routes the document does not have may only be refused, in the error shape', async (t) => {
  const notFound = { error: { code: 'not_found', message: 'No such resource.', details: {} } };
  t.same(contract.check(exchange({ method: 'GET', url: `${BASE}/api/v1/nothing`, status: 404, body: notFound })), []);
  t.same(
    contract.check(exchange({ method: 'PUT', url: `${BASE}/api/v1/emails`, status: 404, body: notFound })),
    [],
    'a method the path does not have',
  );
  t.match(
    contract.check(exchange({ method: 'GET', url: `${BASE}/api/v1/nothing`, status: 200, body: {} })).join('\n'),
    /no such operation/,
  );
  t.match(
    contract
      .check(exchange({ method: 'GET', url: `${BASE}/api/v1/nothing`, status: 404, text: 'Not Found' }))
      .join('\n'),
    /not JSON/,
  );
  t.ok(
    contract.covers(`${BASE}/api/v1/emails`) && contract.covers(`${BASE}/healthz`) && !contract.covers(`${BASE}/login`),
    'what it speaks for',
  );
});

t.test("fastify's 503 while it closes connections is documented; so is the error object's", async (t) => {
  const drain = { error: 'Service Unavailable', message: 'Service Unavailable', statusCode: 503 };
  t.same(contract.check(exchange({ status: 503, body: drain })), []);
  t.same(
    contract.check(exchange({ status: 503, body: { error: { code: 'unavailable', message: 'm', details: {} } } })),
    [],
  );
});

t.test("a real server's answer is caught when the document says otherwise", async (t) => {
  const dir = tempDir();
  const config = loadConfig({ path: writeTestConfig(dir.path), env: {} });
  const app = buildApi({
    config,
    log: silentLogger(),
    lifecycle: { shuttingDown: false, listenersUp: () => true },
  } as unknown as ApiDeps);
  t.teardown(async () => {
    await app.close();
    dir.remove();
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/emails`;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(send),
  });
  const x: Exchange = {
    method: 'POST',
    url,
    requestBody: JSON.stringify(send),
    requestHeaders: {},
    status: res.status,
    headers: res.headers,
    text: await res.text(),
  };
  t.equal(x.status, 401);
  t.same(contract.check(x), [], 'it holds against the document');
  const doc = openApiDocument() as {
    components: {
      responses: Record<
        string,
        { content: Record<string, { schema: { properties: { error: { properties: { code: { enum: string[] } } } } } }> }
      >;
    };
  };
  doc.components.responses.Unauthorized!.content['application/json']!.schema.properties.error.properties.code.enum = [
    'invalid_json',
  ];
  t.match(
    new Contract(doc).check(x).join('\n'),
    /body of POST \/api\/v1\/emails 401: body\/error\/code must be equal to one of the allowed values/,
    'and fails against one that says another code',
  );
});
