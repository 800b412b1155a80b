import t from 'tap';
import { fullGrant } from '../../../src/domain/key-scopes.js';
import { hashKey } from '../../../src/store/credentials.js';
import { migrate } from '../../../src/store/sqlite/db.js';
import { authenticate, listKeys } from '../../../src/store/sqlite/keys.js';
import { storeAtVersion } from '../../helpers/env.js';

// Migration 019 (SQLite; PostgreSQL's 012 is the same statement): a key made before scopes
// existed keeps every scope, and no restriction.

t.test('a key from before scopes is a full key after the migration', async (t) => {
  const db = storeAtVersion(t, 18);
  const key = `ph_live_${'A'.repeat(40)}`;
  db.sqlite
    .prepare(
      "INSERT INTO api_keys (id, customer_id, name, kind, hash, created_at) VALUES (?, 1, 'old', 'production', ?, 0)",
    )
    .run(`key_${'A'.repeat(12)}`, hashKey(key));
  migrate(db, 1);
  t.match(authenticate(db, key), { name: 'old', ...fullGrant() });
  t.match(listKeys(db, 1)[0], fullGrant());
});
