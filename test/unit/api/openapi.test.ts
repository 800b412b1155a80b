// The OpenAPI document (docs/openapi.json): the committed file is what src/api/openapi builds, it
// is valid OpenAPI 3.1, every schema in it compiles as JSON Schema 2020-12, it names exactly the
// routes the server has, and the server serves it without a key.

import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import type { ApiDeps } from '../../../src/api/deps.js';
import { openApiDocument, openApiText } from '../../../src/api/openapi/document.js';
import { buildApi } from '../../../src/api/server.js';
import { loadConfig } from '../../../src/config/load.js';
import { schema as configSchema } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { Contract, DOCUMENT_FILE } from '../../helpers/contract.js';
import { tempDir, writeTestConfig } from '../../helpers/env.js';
import { request } from '../../helpers/http.js';

type Obj = { [key: string]: unknown };
const doc = openApiDocument();

t.test('docs/openapi.json is what src/api/openapi builds (npm run openapi writes it)', async (t) => {
  t.equal(readFileSync(DOCUMENT_FILE, 'utf8'), openApiText());
});

t.test('the document is valid OpenAPI 3.1, by @seriousme/openapi-schema-validator', async (t) => {
  const v = new Validator();
  const r = await v.validate(structuredClone(doc));
  t.same(r.errors, undefined, 'no errors');
  t.equal(r.valid, true);
  t.equal(v.version, '3.1');

  // The validator refuses what is wrong, so a pass above means something.
  const noTitle = structuredClone(doc) as { info: Obj };
  delete noTitle.info.title;
  t.equal((await new Validator().validate(noTitle)).valid, false, 'an info without a title');
  const badRef = structuredClone(doc) as { components: { schemas: Obj } };
  delete badRef.components.schemas.Reply;
  const r2 = await new Validator().validate(badRef);
  t.equal(r2.valid, false, 'a $ref to a schema that is not there');
  t.match(String(r2.errors), /Reply/);
  const noIn = structuredClone(doc) as { paths: Record<string, Record<string, { parameters: Obj[] }>> };
  delete noIn.paths['/api/v1/emails']!.get!.parameters[0]!.in;
  t.equal((await new Validator().validate(noIn)).valid, false, 'a parameter that does not say where it goes');
});

/** Every place the document holds a Schema Object: components.schemas and each `schema` of a parameter, header or media type. */
function schemaLocations(node: unknown, at: string[], out: string[][]): string[][] {
  if (Array.isArray(node)) {
    for (const [i, n] of node.entries()) schemaLocations(n, [...at, String(i)], out);
  } else if (node !== null && typeof node === 'object')
    for (const [k, v] of Object.entries(node)) {
      if (at.length === 2 && at[0] === 'components' && at[1] === 'schemas') out.push([...at, k]);
      else if (k === 'schema' && v !== null && typeof v === 'object') out.push([...at, k]);
      else schemaLocations(v, [...at, k], out);
    }
  return out;
}

t.test(
  'every schema compiles with ajv in strict mode as JSON Schema 2020-12, the dialect of OpenAPI 3.1',
  async (t) => {
    const contract = new Contract(doc, { thorough: true });
    const locations = schemaLocations(doc, [], []);
    t.ok(locations.length > 100, `${locations.length} schemas found`);
    const failed = locations.flatMap((at) => {
      try {
        contract.validator(at);
        return [];
      } catch (e) {
        return [`${at.join('/')}: ${(e as Error).message}`];
      }
    });
    t.same(failed, []);
    const bad = (schema: Obj) => () =>
      new Contract({ ...doc, components: { schemas: { Bad: schema } } }, { thorough: true }).validator([
        'components',
        'schemas',
        'Bad',
      ]);
    t.throws(bad({ type: 'object', requird: ['x'] }), 'a misspelt keyword is refused');
    t.throws(bad({ type: 'string', maxLength: 'ten' }), 'a keyword with a value of the wrong type is refused');
  },
);

/** The API with what building it and answering without a store needs. */
function api() {
  const dir = tempDir();
  const config = loadConfig({ path: writeTestConfig(dir.path), env: {} });
  const app = buildApi({
    config,
    log: silentLogger(),
    lifecycle: { shuttingDown: false, listenersUp: () => true },
  } as unknown as ApiDeps);
  return { app, dir };
}

/** `METHOD /path/{param}` for every route fastify has (HEAD is fastify's own copy of each GET), read off printRoutes' tree. */
function serverRoutes(tree: string): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│├└─\s]*)(\/\S*) \(([A-Z, ]+)\)$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4 - 1;
    stack.length = depth;
    stack.push(m[2]!);
    const path = stack.join('').replace(/:(\w+)/g, '{$1}');
    for (const method of m[3]!.split(', ')) if (method !== 'HEAD') out.push(`${method} ${path}`);
  }
  return out.sort();
}

t.test("servers: one entry a linter accepts, whose default is the API's default address", async (t) => {
  type Server = { url: string; description?: string; variables?: Record<string, { default: string; enum?: string[] }> };
  const servers = (doc as { servers?: Server[] }).servers ?? [];
  t.ok(servers.length > 0, 'not empty (Spectral oas3-api-servers, Redocly no-empty-servers)');
  for (const s of servers) {
    const used = [...s.url.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    t.same(used.sort(), Object.keys(s.variables ?? {}).sort(), 'every variable used is defined and the reverse');
    for (const [name, v] of Object.entries(s.variables ?? {}))
      if (v.enum) t.ok(v.enum.includes(v.default), `${name}'s default is one of its enum`);
    const url = s.url.replace(/\{([^}]+)\}/g, (_m, name: string) => s.variables![name]!.default);
    t.notOk(url.endsWith('/'), 'no trailing slash (the paths start with one)');
    t.notMatch(url, /example\.com/, 'not example.com');
    t.equal(url, `http://${configSchema.api.listen.default}`, 'by default, the API listener of a fresh install');
    t.ok(s.description, "says the address is the operator's");
  }
});

t.test('the document names exactly the routes the server has', async (t) => {
  const { app, dir } = api();
  t.teardown(async () => {
    await app.close();
    dir.remove();
  });
  await app.ready();
  const routes = serverRoutes(app.printRoutes({ commonPrefix: false }));
  t.ok(routes.length >= 19, `${routes.length} routes read`);
  const documented = Object.entries(doc.paths as Record<string, Obj>)
    .flatMap(([path, item]) =>
      ['get', 'post', 'delete', 'put', 'patch'].filter((m) => m in item).map((m) => `${m.toUpperCase()} ${path}`),
    )
    .sort();
  t.same(documented, routes);
  t.same(
    serverRoutes('├── /a (GET, HEAD)\n│   └── /:id (DELETE)\n└── /b (POST)'),
    ['DELETE /a/{id}', 'GET /a', 'POST /b'],
    'the tree reader',
  );
});

t.test('GET /api/v1/openapi.json serves the document without a key; the rest of /api/v1 still wants one', async (t) => {
  const { app, dir } = api();
  t.teardown(async () => {
    await app.close();
    dir.remove();
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const r = await request(`${base}/api/v1/openapi.json`);
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^application\/json/);
  t.same(r.body, doc);
  const denied = await request(`${base}/api/v1/emails`);
  t.equal(denied.status, 401);
  t.equal(denied.body.error.code, 'unauthorized');
  const unknown = await request(`${base}/api/v1/openapi.yaml`);
  t.equal(unknown.status, 401, 'only the document itself goes without a key');
});
