import t from 'tap';
import { gcFunction } from '../../../../src/lib/reclaim.js';
import { isStoreUnavailable } from '../../../../src/store/errors.js';
import { migrate, openDb } from '../../../../src/store/sqlite/db.js';
import { readAuthEpoch } from '../../../../src/store/sqlite/keys.js';
import { GroupCommit } from '../../../../src/store/sqlite/writer/group-commit.js';
import type { SendInput } from '../../../../src/store/sqlite/writer/ops.js';
import { storeWithKey, tempDir, versionsAfter } from '../../../helpers/env.js';

/** The store's auth_epoch, so the writer does not re-verify (tests of the epoch pass their own). */
let currentEpoch = '';
function input(messageId: string, address = 'a@example.org', authEpoch = currentEpoch): SendInput {
  return {
    authEpoch,
    customerId: 1,
    apiKeyId: 'key_x',
    sandbox: false,
    messageId,
    fromHeader: 'a@example.com',
    senderDomain: 'example.com',
    subject: 's',
    metadata: {},
    request: '{}',
    recipients: [{ address, domain: 'example.org', field: 'to' }],
    now: 1,
  };
}

t.test('writes submitted together commit as one batch; a failing job rolls back alone', async (t) => {
  const db = storeWithKey(t);
  currentEpoch = readAuthEpoch(db);
  t.equal(db.sqlite.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(db.sqlite.pragma('synchronous', { simple: true }), 2, 'synchronous = FULL');
  t.equal(db.sqlite.pragma('foreign_keys', { simple: true }), 1);

  const gc = new GroupCommit(db.path);
  const results = await Promise.allSettled([
    gc.submit('accept', input('m1@example.com')),
    gc.submit('accept', input('m2@example.com')),
    gc.submit('accept', input('m1@example.com')), // duplicate message_id: fails alone
    gc.submit('accept', input('m3@example.com')),
  ]);
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
  );
  t.equal(gc.batches, 1, 'one commit for four jobs');
  const ids = db.sqlite.prepare('SELECT message_id FROM messages ORDER BY id').pluck().all();
  t.same(ids, ['m1@example.com', 'm2@example.com', 'm3@example.com'], 'visible to another connection once resolved');
  t.equal(
    db.sqlite.prepare('SELECT COUNT(*) FROM recipients').pluck().get(),
    3,
    'the failed job left no recipient behind',
  );

  // A burst goes to the writer in groups of EAGER; groups that arrive during a commit share the next.
  const before = gc.batches;
  const burst = await Promise.all(
    Array.from({ length: 50 }, (_, i) => gc.submit('accept', input(`b${i}@example.com`))),
  );
  t.equal(burst.length, 50);
  t.ok(gc.batches - before <= Math.ceil(50 / GroupCommit.EAGER), `50 writes took ${gc.batches - before} commits`);
  await gc.close();
  await t.rejects(gc.submit('accept', input('late@example.com')), 'a closed writer refuses');
});

t.test(
  'a full store fails the whole batch with SQLITE_FULL (storage unavailable), and commits nothing of it',
  async (t) => {
    const db = storeWithKey(t);
    currentEpoch = readAuthEpoch(db);
    const pageSize = db.sqlite.pragma('page_size', { simple: true }) as number;
    const gc = new GroupCommit(db.path, ((db.sqlite.pragma('page_count', { simple: true }) as number) + 5) * pageSize);
    t.teardown(() => gc.close());
    const big = (id: string) => ({ ...input(id), request: 'x'.repeat(20_000) });
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => gc.submit('accept', big(`full${i}@example.com`))),
    );
    const failed = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
    t.ok(failed.length > 0, 'the cap was hit');
    for (const f of failed) {
      t.equal((f.reason as { code?: string }).code, 'SQLITE_FULL');
      t.ok(isStoreUnavailable(f.reason));
    }
    const stored = db.sqlite
      .prepare("SELECT COUNT(*) FROM messages WHERE message_id LIKE 'full%'")
      .pluck()
      .get() as number;
    t.equal(stored, results.length - failed.length, 'exactly the fulfilled ones are stored');
    t.equal(db.sqlite.pragma('integrity_check', { simple: true }), 'ok');
  },
);

t.test('the send commit re-verifies the key and the domain when auth_epoch moved since the API looked', async (t) => {
  const db = storeWithKey(t);
  db.sqlite
    .prepare(
      "INSERT INTO domains (customer_id, name, receiving, dkim_selector, dkim_private_key, dkim_public_key, verification_token, verified_at, created_at) VALUES (1, 'example.com', 0, 'posthaste', '', '', 't', 1, 0)",
    )
    .run();
  const gc = new GroupCommit(db.path);
  t.teardown(() => gc.close());
  const epoch = readAuthEpoch(db);
  const ok = await gc.submit('accept', input('e1@example.com', 'a@example.org', epoch));
  t.match(ok, { kind: 'accepted', authEpoch: epoch }, 'same epoch: accepted, no re-check');
  t.match(
    await gc.submit('accept', input('e2@example.com', 'a@example.org', 'stale')),
    { kind: 'accepted', authEpoch: epoch },
    'moved epoch, nothing relevant changed: accepted',
  );

  db.sqlite.prepare("UPDATE domains SET verified_at = NULL WHERE name = 'example.com'").run();
  t.match(await gc.submit('accept', input('e3@example.com', 'a@example.org', epoch)), { kind: 'domain_unverified' });
  db.sqlite.prepare("DELETE FROM domains WHERE name = 'example.com'").run();
  t.match(await gc.submit('accept', input('e4@example.com', 'a@example.org', epoch)), { kind: 'domain_unknown' });
  db.sqlite.prepare("UPDATE api_keys SET revoked_at = 5 WHERE id = 'key_x'").run();
  const revoked = await gc.submit('accept', input('e5@example.com', 'a@example.org', epoch));
  t.match(revoked, { kind: 'key_revoked' });
  t.not(revoked.authEpoch, epoch, 'the new epoch is reported so the API drops its cache');
  t.same(
    db.sqlite.prepare('SELECT message_id FROM messages ORDER BY id').pluck().all(),
    ['e1@example.com', 'e2@example.com'],
    'nothing stored for the refused ones',
  );
});

t.test('migrations are applied once', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const db = openDb(dir.path);
  t.teardown(() => db.close());
  t.same(migrate(db, 0), versionsAfter(0));
  t.same(migrate(db, 0), []);
});

t.test('a committed job leaves nothing of its input behind (no request body kept past its commit)', async (t) => {
  const db = storeWithKey(t);
  currentEpoch = readAuthEpoch(db);
  const gc = new GroupCommit(db.path);
  t.teardown(() => gc.close());
  const collect = gcFunction();
  if (!collect) throw new Error('no gc function');
  const refs: Array<WeakRef<object>> = [];
  // Built in a plain function, so no local of this async test holds the last job.
  const submitOne = (i: number) => {
    const job = { ...input(`keep${i}@example.com`), request: Buffer.alloc(4096, i) };
    refs.push(new WeakRef(job), new WeakRef(job.request));
    return gc.submit('accept', job);
  };
  for (let i = 0; i < 20; i++) await submitOne(i);
  // Settled long ago from the group commit's point of view; the test holds no strong reference.
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  const kept = refs.filter((r) => r.deref() !== undefined).length;
  t.equal(kept, 0, `every job input and body was collected (${kept} of ${refs.length} kept)`);
});
