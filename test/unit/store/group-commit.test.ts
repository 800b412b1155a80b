import t from 'tap';
import { openDb, migrate } from '../../../src/store/db.js';
import { GroupCommit } from '../../../src/store/group-commit.js';
import { tempDir } from '../../helpers/env.js';

t.test('jobs submitted together share one transaction; a failing job rolls back alone', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const db = openDb(dir.path);
  t.teardown(() => db.close());
  migrate(db, 0);
  t.equal(db.sqlite.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(db.sqlite.pragma('synchronous', { simple: true }), 2, 'synchronous = FULL');
  t.equal(db.sqlite.pragma('foreign_keys', { simple: true }), 1);
  const gc = new GroupCommit(db);
  const insert = (name: string) => () => db.sqlite.prepare('INSERT INTO customers (name, created_at) VALUES (?, 0)').run(name).lastInsertRowid;
  const results = await Promise.allSettled([gc.submit(insert('a')), gc.submit(insert('b')), gc.submit(insert('a')), gc.submit(insert('c'))]);
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  t.equal(gc.batches, 1, 'one commit for four jobs');
  const names = db.sqlite.prepare('SELECT name FROM customers ORDER BY name').pluck().all();
  t.same(names, ['a', 'b', 'c']);
});

t.test('migrations are applied once', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const db = openDb(dir.path);
  t.teardown(() => db.close());
  t.same(migrate(db, 0), [1]);
  t.same(migrate(db, 0), []);
});
