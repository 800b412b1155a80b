import t from 'tap';
import { purgeOld } from '../../../src/store/sqlite/retention.js';
import { storeMessage, storeWithKey } from '../../helpers/env.js';

t.test('retention purges bodies of finished old messages and old webhook logs only', async (t) => {
  const db = storeWithKey(t);
  const day = 86_400_000;
  const now = 100 * day;
  const add = (id: string, at: number) =>
    storeMessage(db, { id, now: at, recipients: [{ address: 'a@b.c', domain: 'b.c' }], request: '{"body":"secret"}' });
  add('old-done', now - 40 * day);
  add('old-deferred', now - 40 * day);
  add('new-done', now - 1 * day);
  db.sqlite
    .prepare(
      "UPDATE recipients SET state = 'delivered' WHERE message_id IN (SELECT id FROM messages WHERE message_id IN ('old-done', 'new-done'))",
    )
    .run();
  db.sqlite
    .prepare(
      "UPDATE recipients SET state = 'deferred' WHERE message_id IN (SELECT id FROM messages WHERE message_id = 'old-deferred')",
    )
    .run();
  db.sqlite
    .prepare(
      "INSERT INTO webhook_endpoints (id, customer_id, url, secret, created_at) VALUES ('wh_1', 1, 'https://x.example', 's', 0)",
    )
    .run();
  for (const at of [now - 40 * day, now - 1 * day])
    db.sqlite
      .prepare(
        "INSERT INTO webhook_attempts (endpoint_id, event_id, event_type, attempt, at, duration_ms) VALUES ('wh_1', 'msg_x', 'email.delivered', 1, ?, 1)",
      )
      .run(at);
  t.same(purgeOld(db, now, 30), { messages: 1, attempts: 1 });
  // Kept bodies are the bytes stored (a BLOB), a purged one the text that replaced them.
  const req = (id: string) =>
    String(db.sqlite.prepare('SELECT request FROM messages WHERE message_id = ?').pluck().get(id));
  t.equal(req('old-done'), '{"purged":true}');
  t.equal(req('old-deferred'), '{"body":"secret"}', 'still queued: kept');
  t.equal(req('new-done'), '{"body":"secret"}', 'recent: kept');
  t.same(purgeOld(db, now, 30), { messages: 0, attempts: 0 }, 'idempotent');
  t.same(purgeOld(db, now, 0), { messages: 0, attempts: 0 }, '0 keeps everything');
});
