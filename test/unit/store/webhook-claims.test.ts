import BetterSqlite3 from 'better-sqlite3';
import t from 'tap';
import type { ClaimRoom, SettledAttempt } from '../../../src/store/model.js';
import type { Db } from '../../../src/store/sqlite/db.js';
import { migrate } from '../../../src/store/sqlite/db.js';
import { recordEvent } from '../../../src/store/sqlite/events.js';
import { hasDelivery, recordAttempts } from '../../../src/store/sqlite/webhook-attempts.js';
import {
  claimDeliveries,
  createEndpoint,
  deleteEndpoint,
  eventsAfter,
  fanOutCursor,
  lastFannedOut,
  releaseDeliveryClaims,
} from '../../../src/store/sqlite/webhooks.js';
import { storeAtVersion, storeWithKey, versionsAfter } from '../../helpers/env.js';

/** Room by endpoint (absent: none); take() counts down. */
const rooms = (m: Record<string, number>, dflt = 0): ClaimRoom & { left: Record<string, number> } => {
  const left = { ...m };
  return { left, room: (e) => left[e] ?? dflt, take: (e) => void (left[e] = (left[e] ?? dflt) - 1) };
};

const endpoint = (db: Db, name: string, events: string[] | null = null) =>
  createEndpoint(db, {
    customerId: 1,
    url: `https://${name}.example/hook`,
    events,
    description: name,
    secret: 'whsec_x',
    now: 0,
  }).id;

/** A settled first attempt of the delivery of event `seq` to `endpointId` (no row yet unless `deliveryId`). */
const settled = (
  endpointId: string,
  seq: number,
  state: SettledAttempt['state'],
  deliveryId: number | null = null,
): SettledAttempt => ({
  attempt: {
    endpointId,
    deliveryId,
    eventId: `msg_${seq}`,
    eventType: 'email.delivered',
    attempt: 1,
    at: 50,
    status: state === 'succeeded' ? 200 : 500,
    error: null,
    durationMs: 3,
    response: 'ok',
  },
  deliveryId,
  eventSeq: seq,
  state,
  nextAt: state === 'pending' ? 5050 : null,
  disableEndpoint: false,
});

/** A place in the fan-out's order on SQLite: the event's seq. */
const at = (seq: number) => ({ x: 0, seq });

/** Pending rows as the fan-out would create them for an endpoint without room. */
const pendingRows = (db: Db, endpointId: string, seqs: number[], now = 100) =>
  db.tx(() =>
    recordAttempts(db, { batch: [], pending: seqs.map((eventSeq) => ({ endpointId, eventSeq })), cursor: null, now }),
  );

t.test(
  'recording attempts creates the rows of deliveries fanned out in memory, writes pending rows, and moves the cursor forward only',
  async (t) => {
    const db = storeWithKey(t);
    const a = endpoint(db, 'a');
    const b = endpoint(db, 'b');
    const gone = endpoint(db, 'gone');
    for (let i = 0; i < 5; i++)
      recordEvent(db, { customerId: 1, type: 'email.delivered', data: { n: i }, now: 10 + i });
    const seqs = eventsAfter(db, at(0), 10).map((e) => e.seq);
    t.same(
      eventsAfter(db, at(seqs[2]!), 10).map((e) => e.seq),
      seqs.slice(3),
      'events after a seq, in order',
    );
    const after3 = eventsAfter(db, at(seqs[3]!), 1);
    t.equal(after3.length, 1, 'at most the limit');
    const last = after3[0]!;
    t.match(
      last,
      { pos: at(seqs[4]!), seq: seqs[4], id: /^msg_/, customerId: 1, type: 'email.delivered', createdAt: 14 },
      'each event with its fields',
    );
    t.same(
      JSON.parse(last.body),
      { id: last.id, type: 'email.delivered', timestamp: new Date(14).toISOString(), data: { n: 4 } },
      'the body as stored',
    );
    t.same(fanOutCursor(db), at(0));
    deleteEndpoint(db, gone);
    db.tx(() =>
      recordAttempts(db, {
        batch: [
          settled(a, seqs[0]!, 'succeeded'),
          settled(a, seqs[1]!, 'pending'),
          settled(gone, seqs[0]!, 'succeeded'),
        ],
        pending: [
          { endpointId: b, eventSeq: seqs[0]! },
          { endpointId: gone, eventSeq: seqs[1]! },
        ],
        cursor: at(seqs[1]!),
        now: 100,
      }),
    );
    const rows = db.sqlite
      .prepare('SELECT endpoint_id, event_seq, state, attempts, next_attempt_at FROM webhook_deliveries ORDER BY id')
      .all();
    t.same(
      rows,
      [
        { endpoint_id: a, event_seq: seqs[0], state: 'succeeded', attempts: 1, next_attempt_at: null },
        { endpoint_id: a, event_seq: seqs[1], state: 'pending', attempts: 1, next_attempt_at: 5050 },
        { endpoint_id: b, event_seq: seqs[0], state: 'pending', attempts: 0, next_attempt_at: 100 },
      ],
      "a row per delivery recorded, the failed one due for its retry, b's pending now; nothing for the deleted endpoint",
    );
    const attempts = db.sqlite
      .prepare(
        'SELECT a.endpoint_id, d.event_seq, a.status FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id ORDER BY a.id',
      )
      .all();
    t.same(
      attempts,
      [
        { endpoint_id: a, event_seq: seqs[0], status: 200 },
        { endpoint_id: a, event_seq: seqs[1], status: 500 },
      ],
      'each attempt logged against its new row',
    );
    t.same(fanOutCursor(db), at(seqs[1]!));
    t.same(lastFannedOut(db, at(0)), at(seqs[1]!));
    t.ok(hasDelivery(db, seqs[0]!, b));
    t.notOk(hasDelivery(db, seqs[2]!, a));

    // Fanned out again after a restart (the cursor was behind it): the existing row is settled, not doubled.
    db.tx(() =>
      recordAttempts(db, { batch: [settled(b, seqs[0]!, 'succeeded')], pending: [], cursor: at(seqs[0]!), now: 200 }),
    );
    t.same(db.sqlite.prepare('SELECT state, attempts FROM webhook_deliveries WHERE endpoint_id = ?').all(b), [
      { state: 'succeeded', attempts: 1 },
    ]);
    t.same(fanOutCursor(db), at(seqs[1]!), 'the cursor never moves back');
  },
);

t.test("a claim takes due pending rows only, within each endpoint's room, never a claimed one", async (t) => {
  const db = storeWithKey(t);
  const a = endpoint(db, 'a');
  const b = endpoint(db, 'b');
  for (let i = 0; i < 5; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data: { n: i }, now: 10 });
  const seqs = eventsAfter(db, at(0), 10).map((e) => e.seq);
  pendingRows(db, a, seqs);
  pendingRows(db, b, seqs, 9000);
  const first = claimDeliveries(db, 'w1', 200, rooms({ [a]: 2, [b]: 5 }));
  t.same(
    first.map((d) => [d.endpointId, d.eventSeq]),
    [
      [a, seqs[0]],
      [a, seqs[1]],
    ],
    "a's room is 2; b's rows are not due",
  );
  t.match(JSON.parse(first[0]!.event.body), { type: 'email.delivered', data: { n: 0 } }, 'with the event');
  t.same(
    claimDeliveries(db, 'w2', 200, rooms({}, 100)).map((d) => d.eventSeq),
    seqs.slice(2),
    'the rest, never a claimed one',
  );
  t.same(claimDeliveries(db, 'w3', 9000, rooms({}, 100)).length, 5, "b's when due");
  t.equal(releaseDeliveryClaims(db), 10, 'all released at start');
  t.equal(claimDeliveries(db, 'w4', 9000, rooms({}, 100)).length, 10, 'and claimable again');
});

t.test('the due index holds only unclaimed pending rows, and the claim reads through it', async (t) => {
  const db = storeWithKey(t);
  const a = endpoint(db, 'a');
  for (let i = 0; i < 4; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data: {}, now: 10 });
  pendingRows(
    db,
    a,
    eventsAfter(db, at(0), 10).map((e) => e.seq),
  );
  // Entries in the index itself (SQLite's dbstat table), not rows a query filters afterwards.
  const inIndex = db.sqlite
    .prepare("SELECT SUM(ncell) FROM dbstat WHERE name = 'webhook_deliveries_due' AND pagetype = 'leaf'")
    .pluck();
  claimDeliveries(db, 'w1', 200, rooms({ [a]: 3 }));
  t.equal(inIndex.get(), 1, 'three claimed, one pending: one entry');
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
  const db = storeAtVersion(t, 4);
  const a = endpoint(db, 'a');
  for (let i = 0; i < 3; i++) recordEvent(db, { customerId: 1, type: 'email.delivered', data: {}, now: 10 });
  const now = 100;
  const insert = db.sqlite.prepare(
    "INSERT INTO webhook_deliveries (endpoint_id, event_seq, kind, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, 'event', 'pending', 0, ?, ?, ?)",
  );
  for (const e of eventsAfter(db, at(0), 10)) insert.run(a, e.seq, now, now, now);
  claimDeliveries(db, 'old', 200, rooms({ [a]: 1 }));
  const before = db.sqlite.prepare('SELECT * FROM webhook_deliveries ORDER BY id').all();
  t.same(migrate(db, 0), versionsAfter(4));
  t.same(db.sqlite.prepare('SELECT * FROM webhook_deliveries ORDER BY id').all(), before, 'rows untouched');
  t.equal(claimDeliveries(db, 'new', 200, rooms({}, 10)).length, 2, 'the two unclaimed');
  t.equal(releaseDeliveryClaims(db), 3);
});

t.test(
  'tryTx: gives up at once while another connection holds the write lock, runs when it is free, rolls back on a throw',
  async (t) => {
    const db = storeWithKey(t);
    const other = new BetterSqlite3(db.path);
    t.teardown(() => other.close());
    other.prepare('BEGIN IMMEDIATE').run();
    const started = performance.now();
    t.equal(
      db.tryTx(() => db.sqlite.prepare("INSERT INTO settings (name, value) VALUES ('x', '1')").run()),
      undefined,
      'busy: not run',
    );
    t.ok(performance.now() - started < 50, 'and no wait in the busy handler');
    t.notOk(db.sqlite.inTransaction);
    other.prepare('COMMIT').run();
    t.same(
      db.tryTx(() => 7),
      { value: 7 },
    );
    t.throws(() =>
      db.tryTx(() => {
        db.sqlite.prepare("INSERT INTO settings (name, value) VALUES ('y', '1')").run();
        throw new Error('boom');
      }),
    );
    t.notOk(db.sqlite.inTransaction);
    t.equal(db.sqlite.prepare("SELECT COUNT(*) FROM settings WHERE name = 'y'").pluck().get(), 0, 'rolled back');
    t.equal(db.sqlite.pragma('busy_timeout', { simple: true }), 5000, 'the busy timeout is back for everything else');
  },
);
