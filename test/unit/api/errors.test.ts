// The API's error mapping (src/api/errors.ts) and the PostgreSQL engine's (src/store/pg/db.ts,
// unavailable): a store that cannot be reached is 503 store_unavailable with Retry-After, wherever
// it fails (the key lookup in the onRequest hook, the commit after the body was read) and whatever
// the driver's error looks like; it is never taken for the client's fault (a 400 tells a client not
// to retry). The client's own abort, and only it, is the "body cut short" case.
import pg from 'pg';
import t, { type Test } from 'tap';
import type { ApiDeps } from '../../../src/api/deps.js';
import { apiErrorOf } from '../../../src/api/errors.js';
import { buildApi } from '../../../src/api/server.js';
import { loadConfig } from '../../../src/config/load.js';
import { live, sendSettings } from '../../../src/config/settings.js';
import { ApiError } from '../../../src/domain/errors.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { MemoryBudget } from '../../../src/lib/memory-budget.js';
import { AuthCache } from '../../../src/store/auth-cache.js';
import { StoreUnavailable } from '../../../src/store/errors.js';
import { unavailable } from '../../../src/store/pg/db.js';
import type { Store } from '../../../src/store/store.js';
import type { WebhookService } from '../../../src/webhooks/service.js';
import { freePort, testDatabase } from '../../../support/postgres.js';
import { tempDir, writeTestConfig } from '../../helpers/env.js';
import { freshStore, sender } from '../../helpers/stores.js';

/** What Node's socket layer throws when a peer resets the connection (pg passes it on as it is). */
const reset = () => Object.assign(new Error('read ECONNRESET'), { errno: -104, code: 'ECONNRESET', syscall: 'read' });

/** A PostgreSQL error as pg builds it from the server's ErrorResponse. */
const sqlstate = (code: string, message: string) => Object.assign(new pg.DatabaseError(message, 0, 'error'), { code });

t.test('every error PostgreSQL or its driver gives while the server restarts is StoreUnavailable', async (t) => {
  const cases: [string, unknown][] = [
    ['57P01 admin_shutdown', sqlstate('57P01', 'terminating connection due to administrator command')],
    ['57P02 crash_shutdown', sqlstate('57P02', 'terminating connection because of crash of another server process')],
    ['57P03 cannot_connect_now', sqlstate('57P03', 'the database system is shutting down')],
    ['57000 operator_intervention', sqlstate('57000', 'operator intervention')],
    ['57014 query_canceled', sqlstate('57014', 'canceling statement due to statement timeout')],
    ['08006 connection_failure', sqlstate('08006', 'connection failure')],
    ['08P01 protocol_violation', sqlstate('08P01', 'protocol violation')],
    ['53300 too_many_connections', sqlstate('53300', 'sorry, too many clients already')],
    ['58030 io_error', sqlstate('58030', 'could not write to file')],
    ['ECONNRESET', reset()],
    ['EPIPE', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })],
    ['Connection terminated unexpectedly', new Error('Connection terminated unexpectedly')],
    ['connection timeout', new Error('Connection terminated due to connection timeout')],
    ['not queryable', new Error('Client has encountered a connection error and is not queryable')],
    ['pool timeout', new Error('timeout exceeded when trying to connect')],
    [
      'AggregateError of refused connects',
      Object.assign(
        new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' })], ''),
        {},
      ),
    ],
  ];
  for (const [what, e] of cases) {
    const u = unavailable(e);
    t.ok(u instanceof StoreUnavailable, what);
    t.equal(apiErrorOf(u)?.status, 503, `${what}: 503`);
  }
  const kept = new StoreUnavailable('x', 'ECONNRESET');
  t.equal(unavailable(kept), kept, 'a StoreUnavailable passes as it is');
  t.equal(unavailable(sqlstate('23505', 'duplicate key')), undefined, 'a unique violation is not');
  t.equal(unavailable(sqlstate('42601', 'syntax error at or near')), undefined, 'an SQL syntax error is not');
  t.equal(unavailable(new SyntaxError('Unexpected token')), undefined, 'nor is a JavaScript SyntaxError');
});

t.test("the driver's real errors: a refused connection, a terminated backend", async (t) => {
  const nobody = new pg.Client({ connectionString: `postgres://x@127.0.0.1:${await freePort()}/x` });
  const refused = await nobody.connect().then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(unavailable(refused), `a refused connection: ${(refused as Error).message}`);

  const url = await testDatabase(t);
  const victim = new pg.Client({ connectionString: url });
  victim.on('error', () => undefined);
  await victim.connect();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());
  const { rows } = await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
  await new Promise((r) => setTimeout(r, 100));
  const lost = await victim.query('SELECT 1').then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(unavailable(lost), `a terminated backend: ${(lost as Error).message}`);
  const again = await victim.query('SELECT 1').then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(unavailable(again), `the same client once more: ${(again as Error).message}`);
  await victim.end().catch(() => undefined);
});

t.test('apiErrorOf maps by what an error is, never by its shape', async (t) => {
  const own = new ApiError('validation_failed', 'x');
  t.equal(apiErrorOf(own), own, 'an ApiError as it is');
  t.equal(apiErrorOf(new StoreUnavailable('gone', 'ECONNRESET'))?.code, 'store_unavailable');
  t.equal(
    apiErrorOf(Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' }))?.code,
    'store_unavailable',
  );
  t.equal(apiErrorOf(reset()), undefined, "a bare socket error is not the client's: an internal error");
  t.equal(apiErrorOf(new SyntaxError('Unexpected token } in JSON')), undefined, 'nor a SyntaxError from anywhere');
  t.equal(
    apiErrorOf(Object.assign(new Error('too large'), { statusCode: 413 })),
    undefined,
    "a status on an error that is not fastify's is not taken",
  );
  t.equal(
    apiErrorOf(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }))?.code,
    'payload_too_large',
  );
});

/** The API on a real socket (the body read as a client sends it), its store failing where `fail` says. */
async function api(t: Test, fail: (store: Store) => Store): Promise<{ url: string; key: string }> {
  const real = await freshStore(t, 'sqlite');
  const who = await sender(real);
  const store = fail(real);
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const config = loadConfig({ path: writeTestConfig(dir.path), env: {} });
  const deps: ApiDeps = {
    store,
    auth: new AuthCache(store),
    config,
    send: live(sendSettings(config)),
    budget: new MemoryBudget(64 * 1024 * 1024),
    clock: { now: () => Date.now() },
    log: silentLogger(),
    lifecycle: { shuttingDown: false, listenersUp: () => true },
    webhooks: undefined as unknown as WebhookService,
  };
  const app = buildApi(deps);
  t.teardown(() => app.close());
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, key: who.key };
}

const valid = { from: 'hello@example.com', to: 'alice@example.org', subject: 'Hello', text_body: 'Hi' };

const post = (url: string, key: string) =>
  fetch(`${url}/api/v1/emails`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(valid),
  });

t.test('the commit fails with ECONNRESET after the body was read: 503 with Retry-After, not 400', async (t) => {
  const { url, key } = await api(t, (s) => ({
    ...s,
    messages: {
      ...s.messages,
      accept: async () => {
        throw unavailable(reset())!;
      },
    },
  }));
  const r = await post(url, key);
  const body = (await r.json()) as { error: { code: string } };
  t.equal(r.status, 503, `status ${r.status} ${body.error.code}`);
  t.equal(body.error.code, 'store_unavailable');
  t.equal(r.headers.get('retry-after'), '30');
});

t.test('the key lookup (onRequest hook) fails: 503 with Retry-After', async (t) => {
  let failing = false;
  const { url, key } = await api(t, (s) => ({
    ...s,
    keys: {
      ...s.keys,
      authenticate: async (k: string) => {
        if (failing) throw unavailable(sqlstate('57P01', 'terminating connection due to administrator command'))!;
        return s.keys.authenticate(k);
      },
      authEpoch: async () => {
        if (failing) throw unavailable(reset())!;
        return s.keys.authEpoch();
      },
    },
  }));
  failing = true;
  const r = await post(url, key);
  t.equal(r.status, 503);
  t.equal(((await r.json()) as { error: { code: string } }).error.code, 'store_unavailable');
  t.equal(r.headers.get('retry-after'), '30');
});
