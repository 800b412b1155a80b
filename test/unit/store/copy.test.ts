import t from 'tap';
import { reply } from '../../../src/domain/outcome.js';
import { copySqliteToPg } from '../../../src/store/copy.js';
import { PgDb } from '../../../src/store/pg/db.js';
import { pgStore } from '../../../src/store/pg/index.js';
import { openDb } from '../../../src/store/sqlite/db.js';
import type { Store } from '../../../src/store/store.js';
import { testDatabase } from '../../../support/postgres.js';
import { freshStore, readEvents, send, sender } from '../../helpers/stores.js';

// `db copy`: a SQLite store with some of everything in it, copied into an empty PostgreSQL
// database, reads the same through the store interface, and goes on from there.

async function populate(s: Store) {
  const who = await sender(s);
  const a = await send(s, who, { to: ['a@example.net', 'b@example.net'], tags: ['t'], now: 1000 });
  const b = await send(s, who, { to: ['c@example.net'], now: 2000 });
  const claimed = await s.delivery.claim('w', 3000, 10);
  await s.delivery.record({
    results: claimed.map((c) => ({
      ...c,
      outcome:
        c.recipient.address === 'b@example.net'
          ? {
              kind: 'bounced',
              bounceType: 'hard',
              reply: reply(550, '5.1.1', 'no', 'unknown_recipient'),
              suppress: true,
            }
          : {
              kind: 'delivered',
              reply: reply(250, '2.0.0', 'ok', 'delivered'),
              mx: 'mx',
              tls: true,
              tlsVerified: false,
            },
    })),
    composed: new Map([[claimed[0]!.message.id, Buffer.from('raw')]]),
    postpone: [],
    policy: { retrySchedule: [60_000], maxQueueTime: 3_600_000 },
    now: 3000,
  });
  const e = await s.webhooks.createEndpoint({
    customerId: who.customerId,
    url: 'https://hooks.example/',
    events: null,
    description: 'd',
    secret: 'whsec_x',
    now: 10,
  });
  const events = await readEvents(s, 3);
  await s.webhooks.recordAttempts({
    batch: [
      {
        attempt: {
          endpointId: e.id,
          deliveryId: null,
          eventId: events[0]!.id,
          eventType: events[0]!.type,
          attempt: 1,
          at: 4000,
          status: 200,
          error: null,
          durationMs: 5,
          response: 'ok',
        },
        deliveryId: null,
        eventSeq: events[0]!.seq,
        state: 'succeeded',
        nextAt: null,
        disableEndpoint: false,
      },
    ],
    pending: [],
    cursor: events[0]!.pos,
    now: 4000,
  });
  await s.users.add({ email: 'admin@example.com', passwordHash: 'scrypt$x', role: 'admin', customerId: null, now: 5 });
  await s.suppressions.add({ customerId: who.customerId, address: 'manual@example.net', reason: 'manual', now: 6 });
  await s.warmup.reserve('1970-01-01', [{ ip: '192.0.2.20', destination: 'example.net', n: 7, cap: 50 }]);
  return { who, ids: [a.messageId, b.messageId], endpoint: e.id, events };
}

t.test(
  'a SQLite store copied into an empty PostgreSQL database reads the same, and goes on where it left off',
  async (t) => {
    const lite = await freshStore(t, 'sqlite');
    const { who, ids, endpoint, events } = await populate(lite);
    const db = openDb((lite.location as string).replace(/\/posthaste\.db$/, ''));
    t.teardown(() => db.close());
    const url = await testDatabase(t);
    const pg = pgStore(url, { max: 2 });
    t.teardown(() => pg.admin.close());
    await pg.admin.migrate(1);
    const raw = new PgDb(url, { max: 1 });
    t.teardown(() => raw.close());
    const report = await copySqliteToPg(db, raw);
    t.ok(
      report.tables.every((x) => x.sqlite === x.postgres),
      'every table counted the same',
    );
    t.match(
      report.tables.find((x) => x.table === 'events'),
      { sqlite: 4, postgres: 4 },
    );
    for (const id of ids)
      t.same(
        await pg.messages.get(who.customerId, id),
        await lite.messages.get(who.customerId, id),
        `message ${id} reads the same`,
      );
    t.same(
      await pg.suppressions.list(who.customerId, { limit: 10 }),
      await lite.suppressions.list(who.customerId, { limit: 10 }),
    );
    t.same(await pg.webhooks.listEndpoints(), await lite.webhooks.listEndpoints());
    t.same(await pg.webhooks.listAttempts(endpoint, 10), await lite.webhooks.listAttempts(endpoint, 10));
    t.same(
      await pg.admin.overview(who.customerId, 5000),
      await lite.admin.overview(who.customerId, 5000),
      'the counters copied as they are',
    );
    t.same(await pg.admin.status(5000), await lite.admin.status(5000));
    t.same(await pg.keys.authEpoch(), await lite.keys.authEpoch(), 'the auth epoch kept');
    t.same(
      await pg.warmup.usage('1970-01-01'),
      await lite.warmup.usage('1970-01-01'),
      "a warming address's use today kept",
    );
    t.same(await pg.admin.secret('x'), await pg.admin.secret('x'));
    const key = (await lite.keys.list(who.customerId))[0]!;
    t.same(await pg.keys.list(who.customerId), [key]);
    t.match(await pg.users.find('admin@example.com'), { password_hash: 'scrypt$x' });
    // The fan-out goes on after the event its cursor stood at.
    t.same(
      (await readEvents(pg, 3)).map((e) => e.id),
      events.slice(1).map((e) => e.id),
      'the events not yet fanned out, and only those',
    );
    // New rows take ids after the copied ones.
    const next = await send(pg, { customerId: who.customerId, keyId: key.id }, { now: 9000 });
    t.equal(next.result.kind, 'accepted');
    t.ok(
      (await pg.messages.get(who.customerId, next.messageId))!.email_id >
        (await lite.messages.get(who.customerId, ids[1]!))!.email_id,
    );
    t.equal((await pg.delivery.claim('w', 9000, 10)).length, 1, 'and it is claimed for delivery');
    await t.rejects(copySqliteToPg(db, raw), /not empty: customers has/, 'a second copy is refused');
  },
);

t.test('a copy that fails leaves nothing behind', async (t) => {
  const lite = await freshStore(t, 'sqlite');
  await populate(lite);
  const db = openDb((lite.location as string).replace(/\/posthaste\.db$/, ''));
  t.teardown(() => db.close());
  const url = await testDatabase(t);
  const pg = pgStore(url, { max: 2 });
  t.teardown(() => pg.admin.close());
  await pg.admin.migrate(1);
  const raw = new PgDb(url, { max: 1 });
  t.teardown(() => raw.close());
  // A row PostgreSQL refuses (an event whose message does not exist) stops the copy part way.
  db.sqlite.pragma('foreign_keys = OFF');
  db.sqlite
    .prepare(
      "INSERT INTO events (id, customer_id, type, message_id, created_at, body) VALUES ('msg_orphan', 1, 'email.delivered', 999999, 1, '{}')",
    )
    .run();
  await t.rejects(copySqliteToPg(db, raw));
  t.same(await pg.customers.list(), [], 'nothing was kept');
});
