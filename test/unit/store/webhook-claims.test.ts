import t from 'tap';
import BetterSqlite3 from 'better-sqlite3';
import { openDb, migrate } from '../../../src/store/db.js';
import { migrations } from '../../../src/store/migrations/index.js';
import { ensureDefaultCustomer } from '../../../src/store/customers.js';
import { recordEvent } from '../../../src/store/events.js';
import { claimDeliveries, createEndpoint, fanOut, releaseDeliveryClaims, type ClaimedDelivery, type ClaimRoom } from '../../../src/store/webhooks.js';
import { storeWithKey, tempDir } from '../../helpers/env.js';
import type { Db } from '../../../src/store/db.js';

/** Room by endpoint (absent: none); take() counts down. */
const rooms = (m: Record<string, number>, dflt = 0): ClaimRoom & { left: Record<string, number> } => {
  const left = { ...m };
  return { left, room: (e) => left[e] ?? dflt, take: (e) => void (left[e] = (left[e] ?? dflt) - 1) };
};

const endpoint = (db: Db, name: string, events: string[] | null = null) =>
  createEndpoint(db, { customerId: 1, url: `https://${name}.example/hook`, events, description: name, secret: 'whsec_x', now: 0 }).id;

t.test("fan-out creates deliveries claimed up to each endpoint's room, the rest pending; a claim finds only the unclaimed", async (t) => {
  const db = storeWithKey(t);
  const a = endpoint(db, 'a');
  const b = endpoint(db, 'b');
  const bounced = endpoint(db, 'c', ['email.bounced']);
  const ids = Array.from({ length: 5 }, (_, i) => recordEvent(db, { customerId: 1, type: 'email.delivered', data: { n: i }, now: 10 + i }).id);

  const into: ClaimedDelivery[] = [];
  const room = rooms({ [a]: 2 }); // b: none claimed
  t.equal(fanOut(db, 100, 1000, { worker: 'w1', room, into }), 10, 'a row per event and subscribed endpoint (c takes bounces only)');
  t.same(
    into.map((d) => [d.endpointId, d.event.id, d.attempts]),
    [
      [a, ids[0], 0],
      [a, ids[1], 0],
    ],
    'two claimed for a, in event order, with their events',
  );
  t.match(JSON.parse(into[0]!.event.body), { id: ids[0], type: 'email.delivered', data: { n: 0 } });
  t.equal(room.left[a], 0, 'the room is used up');
  const locked = db.sqlite.prepare('SELECT endpoint_id, locked_by, locked_at FROM webhook_deliveries WHERE locked_by IS NOT NULL ORDER BY id').all();
  t.same(locked, [
    { endpoint_id: a, locked_by: 'w1', locked_at: 100 },
    { endpoint_id: a, locked_by: 'w1', locked_at: 100 },
  ]);
  t.equal(fanOut(db, 100, 1000, { worker: 'w1', room, into }), 0, 'each event is fanned out once');

  const claimed = claimDeliveries(db, 'w2', 200, rooms({}, 100));
  t.same(
    claimed.map((d) => `${d.endpointId} ${d.event.id}`).sort(),
    [...ids.slice(2).map((id) => `${a} ${id}`), ...ids.map((id) => `${b} ${id}`)].sort(),
    'the claim takes the pending rows only, never one the fan-out claimed',
  );
  t.same(claimDeliveries(db, 'w3', 200, rooms({}, 100)), [], 'nothing left unclaimed');
  t.equal(releaseDeliveryClaims(db), 10, 'all released at start');
  t.equal(claimDeliveries(db, 'w4', 200, rooms({}, 100)).length, 10, 'and claimable again');
  t.equal(db.sqlite.prepare('SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?').pluck().get(bounced), 0);
});

t.test('the due index holds only unclaimed pending rows, and the claim reads through it', async (t) => {
  const db = storeWithKey(t);
  const a = endpoint(db, 'a');
  for (let i = 0; i < 4; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data: {}, now: 10 });
  fanOut(db, 100, 1000, { worker: 'w1', room: rooms({ [a]: 3 }), into: [] });
  // Entries in the index itself (SQLite's dbstat table), not rows a query filters afterwards.
  const inIndex = db.sqlite.prepare("SELECT SUM(ncell) FROM dbstat WHERE name = 'webhook_deliveries_due' AND pagetype = 'leaf'").pluck();
  t.equal(inIndex.get(), 1, 'three claimed at fan-out, one pending: one entry');
  claimDeliveries(db, 'w2', 200, rooms({}, 10));
  t.equal(inIndex.get(), 0, 'claimed: it leaves the index');
  releaseDeliveryClaims(db);
  t.equal(inIndex.get(), 4, 'released: all four are back');
  const plan = db.sqlite
    .prepare(
      `EXPLAIN QUERY PLAN SELECT d.id FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq
       WHERE d.endpoint_id = ? AND d.state = 'pending' AND d.next_attempt_at <= ? AND d.locked_by IS NULL ORDER BY d.next_attempt_at, d.id LIMIT ?`,
    )
    .all(a, 1000, 10) as Array<{ detail: string }>;
  t.match(plan[0]!.detail, /USING INDEX webhook_deliveries_due/);
});

t.test('migration 5 on a version-4 store: claimed rows leave the due index, nothing else changes', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const db = openDb(dir.path);
  t.teardown(() => db.close());
  db.sqlite.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  for (const m of migrations.filter((m) => m.version <= 4)) {
    db.sqlite.exec(m.sql);
    db.sqlite.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name);
  }
  ensureDefaultCustomer(db, 0);
  const a = endpoint(db, 'a');
  for (let i = 0; i < 3; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data: {}, now: 10 });
  fanOut(db, 100, 1000, { worker: 'old', room: rooms({ [a]: 1 }), into: [] });
  const before = db.sqlite.prepare('SELECT * FROM webhook_deliveries ORDER BY id').all();
  t.same(migrate(db, 0), [5]);
  t.same(db.sqlite.prepare('SELECT * FROM webhook_deliveries ORDER BY id').all(), before, 'rows untouched');
  t.equal(claimDeliveries(db, 'new', 200, rooms({}, 10)).length, 2, 'the two unclaimed');
  t.equal(releaseDeliveryClaims(db), 3);
});

t.test('tryTx: gives up at once while another connection holds the write lock, runs when it is free, rolls back on a throw', async (t) => {
  const db = storeWithKey(t);
  const other = new BetterSqlite3(db.path);
  t.teardown(() => other.close());
  other.prepare('BEGIN IMMEDIATE').run();
  const started = performance.now();
  t.equal(db.tryTx(() => db.sqlite.prepare("INSERT INTO settings (name, value) VALUES ('x', '1')").run()), undefined, 'busy: not run');
  t.ok(performance.now() - started < 50, 'and no wait in the busy handler');
  t.notOk(db.sqlite.inTransaction);
  other.prepare('COMMIT').run();
  t.same(db.tryTx(() => 7), { value: 7 });
  t.throws(() =>
    db.tryTx(() => {
      db.sqlite.prepare("INSERT INTO settings (name, value) VALUES ('y', '1')").run();
      throw new Error('boom');
    }),
  );
  t.notOk(db.sqlite.inTransaction);
  t.equal(db.sqlite.prepare("SELECT COUNT(*) FROM settings WHERE name = 'y'").pluck().get(), 0, 'rolled back');
  t.equal(db.sqlite.pragma('busy_timeout', { simple: true }), 5000, 'the busy timeout is back for everything else');
});
