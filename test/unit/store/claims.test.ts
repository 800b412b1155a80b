import t from 'tap';
import type { Db } from '../../../src/store/sqlite/db.js';
import { migrate } from '../../../src/store/sqlite/db.js';
import { claimDue, releaseClaims, releaseClaimsOf } from '../../../src/store/sqlite/queue.js';
import { storeAtVersion, storeMessage, storeWithKey, versionsAfter } from '../../helpers/env.js';

const add = (db: Db, id: string, due: number, n = 1) =>
  storeMessage(db, {
    id,
    now: due,
    recipients: Array.from({ length: n }, (_, i) => ({ address: `r${i}@${id}`, domain: id })),
  });

t.test(
  'claims: earliest due first, never twice, none before due, released by outcome, by id and at start',
  async (t) => {
    const db = storeWithKey(t);
    add(db, 'late.test', 3000, 2);
    add(db, 'early.test', 1000, 2);
    add(db, 'future.test', 9000, 1);
    t.same(
      claimDue(db, 'w1', 5000, 3).map((c) => c.domain),
      ['early.test', 'early.test', 'late.test'],
      'due order',
    );
    t.same(
      claimDue(db, 'w2', 5000, 10).map((c) => c.address),
      ['r1@late.test'],
      'the claimed ones are skipped; the future one is not due',
    );
    t.same(claimDue(db, 'w3', 5000, 10), [], 'nothing left');
    const row = db.sqlite
      .prepare(
        'SELECT recipient_id, worker, claimed_at FROM recipient_claims ORDER BY claimed_at, recipient_id LIMIT 1',
      )
      .get();
    t.match(row, { worker: 'w1', claimed_at: 5000 });
    // Delivered: the recipient leaves the due index; its claim row goes with the outcome.
    db.sqlite
      .prepare(
        "UPDATE recipients SET state = 'delivered', next_attempt_at = NULL WHERE domain = 'late.test' AND address = 'r0@late.test'",
      )
      .run();
    const released = db.sqlite
      .prepare("SELECT id FROM recipients WHERE domain = 'early.test' ORDER BY id")
      .pluck()
      .all() as number[];
    releaseClaimsOf(db, released);
    t.same(
      claimDue(db, 'w4', 5000, 10).map((c) => c.domain),
      ['early.test', 'early.test'],
      'released by id: claimable again',
    );
    t.equal(releaseClaims(db), 4, 'every claim released at start');
    t.equal(claimDue(db, 'w5', 5000, 10).length, 3, 'all due again');
  },
);

t.test(
  'migration 4 on a version-3 store: claims move to their own table, the due index covers the claim',
  async (t) => {
    const db = storeAtVersion(t, 3);
    db.sqlite
      .prepare(
        "INSERT INTO api_keys (id, customer_id, kind, hash, created_at) VALUES ('key_x', 1, 'production', x'00', 0)",
      )
      .run();
    // Rows as version 3 wrote them (today's acceptMessage writes columns added since).
    db.sqlite.exec(`INSERT INTO messages (id, customer_id, message_id, api_key_id, sandbox, from_header, sender_domain, subject, request, created_at) VALUES (1, 1, 'old.test', 'key_x', 0, 'a', 'e', 's', '{}', 1000);
    INSERT INTO recipients (message_id, customer_id, address, domain, field, state, attempts, next_attempt_at, created_at, updated_at) VALUES
      (1, 1, 'r0@old.test', 'old.test', 'to', 'queued', 0, 1000, 1000, 1000), (1, 1, 'r1@old.test', 'old.test', 'to', 'queued', 0, 1000, 1000, 1000)`);
    db.sqlite.prepare("UPDATE recipients SET locked_by = 'pid-old', locked_at = 1 WHERE address = 'r0@old.test'").run();
    t.same(migrate(db, 0), versionsAfter(3));
    const columns = (db.sqlite.prepare('PRAGMA table_info(recipients)').all() as Array<{ name: string }>).map(
      (c) => c.name,
    );
    t.notOk(columns.includes('locked_by') || columns.includes('locked_at'), 'the old claim columns are gone');
    t.equal(
      claimDue(db, 'w', 5000, 10).length,
      2,
      'an old claim does not survive the upgrade (claims are released at start anyway)',
    );
    const plan = (
      db.sqlite
        .prepare(
          "EXPLAIN QUERY PLAN SELECT r.id, r.message_id, r.address, r.domain, r.attempts FROM recipients r WHERE r.state IN ('queued', 'deferred') AND r.next_attempt_at <= 1 ORDER BY r.next_attempt_at LIMIT 5",
        )
        .all() as Array<{ detail: string }>
    )
      .map((r) => r.detail)
      .join(' ');
    t.match(plan, /COVERING INDEX recipients_due/, 'claims read the index only');
  },
);
