// Migration 008 rebuilds the recipients table (a new CHECK): rows, their references from events
// and inbound reports, the indexes and the activity trigger all survive it.
import t from 'tap';
import { migrate } from '../../../src/store/sqlite/db.js';
import { storeAtVersion, versionsAfter } from '../../helpers/env.js';

t.test('a store at version 7 with mail in it migrates to 8 intact', async (t) => {
  const db = storeAtVersion(t, 7);
  const now = Date.UTC(2026, 10, 23, 10);
  db.sqlite.exec(`INSERT INTO messages (id, customer_id, message_id, sandbox, from_header, sender_domain, subject, request, created_at) VALUES (1, 1, 'a@example.com', 0, 'a@example.com', 'example.com', 's', '{}', ${now});
    INSERT INTO recipients (id, message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, created_at, updated_at) VALUES
      (1, 1, 1, 'x@example.org', 'example.org', 'to', 'delivered', 1, NULL, ${now}, ${now}),
      (2, 1, 1, 'y@example.org', 'example.org', 'cc', 'deferred', 2, ${now + 60_000}, ${now}, ${now});
    INSERT INTO events (id, customer_id, type, message_id, recipient_id, created_at, body) VALUES ('msg_1', 1, 'email.delivered', 1, 1, ${now}, '{}');`);
  t.same(migrate(db, now), versionsAfter(7));
  t.same(db.sqlite.prepare('SELECT id, state, attempts, next_attempt_at FROM recipients ORDER BY id').all(), [
    { id: 1, state: 'delivered', attempts: 1, next_attempt_at: null },
    { id: 2, state: 'deferred', attempts: 2, next_attempt_at: now + 60_000 },
  ]);
  t.same(db.sqlite.pragma('foreign_key_check'), [], 'every reference still holds');
  t.equal(db.sqlite.pragma('foreign_keys', { simple: true }), 1, 'foreign keys are on again');
  const indexes = db.sqlite
    .prepare(
      "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'recipients' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .pluck()
    .all() as string[];
  t.same(indexes, ['recipients_address', 'recipients_due', 'recipients_message', 'recipients_undelivered']);
  db.sqlite.prepare("UPDATE recipients SET state = 'canceled' WHERE id = 2").run();
  t.throws(
    () => db.sqlite.prepare("UPDATE recipients SET state = 'lost' WHERE id = 2").run(),
    /CHECK constraint failed/,
  );
  const before = db.sqlite
    .prepare("SELECT COALESCE(SUM(count), 0) FROM activity_hourly WHERE kind = 'accepted'")
    .pluck()
    .get() as number;
  db.sqlite
    .prepare(
      "INSERT INTO recipients (message_id, customer_id, address, domain, field, created_at, updated_at) VALUES (1, 1, 'z@example.org', 'example.org', 'bcc', ?, ?)",
    )
    .run(now, now);
  t.equal(
    db.sqlite.prepare("SELECT SUM(count) FROM activity_hourly WHERE kind = 'accepted'").pluck().get(),
    before + 1,
    'the activity trigger is back',
  );
  t.throws(
    () =>
      db.sqlite
        .prepare(
          "INSERT INTO recipients (message_id, customer_id, address, domain, field, created_at, updated_at) VALUES (99, 1, 'q@example.org', 'example.org', 'to', 0, 0)",
        )
        .run(),
    /FOREIGN KEY/,
    'its own references are enforced',
  );
});
