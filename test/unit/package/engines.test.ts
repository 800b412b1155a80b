// What `npm ci` installs must run on every Node.js the project says it runs on: npm warns
// EBADENGINE for a locked package whose `engines.node` leaves out the running Node, and a package
// that declares a newer Node may use what the older one lacks (cookie@2 is ES modules only, which
// light-my-request `require`s: Node 20 does that unflagged only from 20.19).

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import t from 'tap';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; dev?: boolean }>;
};

const oldest = semver.minVersion(pkg.engines.node)!.version;

t.test(
  `every locked package runs on the oldest Node the project admits (${oldest}) and on this one (${process.version})`,
  async (t) => {
    const refused: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const wants = !Array.isArray(entry.engines) ? entry.engines?.node : undefined;
      if (path === '' || wants === undefined) continue;
      for (const node of [oldest, process.version])
        if (!semver.satisfies(node, wants, { includePrerelease: true }))
          refused.push(
            `${path.replace(/^.*node_modules\//, '')}@${entry.version}${entry.dev ? ' (dev)' : ''} wants node ${wants}, not ${node}`,
          );
    }
    t.same(refused, []);
  },
);

t.test('the check refuses what npm would warn about', async (t) => {
  t.notOk(semver.satisfies('20.19.0', '>=22'), 'cookie@2 on Node 20');
  t.ok(semver.satisfies('20.19.0', '20.x || 22.x || 23.x'), 'better-sqlite3 12 on Node 20');
});

t.test("fastify's inject() works with the cookie package the override gives light-my-request", async (t) => {
  const { default: fastify } = await import('fastify');
  const app = fastify();
  app.get('/', async (request) => ({ cookie: request.headers.cookie ?? null }));
  const res = await app.inject({ method: 'GET', url: '/', cookies: { session: 'a b', other: '1' } });
  t.same(res.json(), { cookie: 'session=a%20b; other=1' }, 'cookies encoded by cookie.stringifySetCookie');
  await app.close();
});
