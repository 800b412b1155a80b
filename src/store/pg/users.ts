import { hashId, newSession } from '../credentials.js';
import { type Session, sessionUse, type User } from '../model.js';
import type { UserStore } from '../store.js';
import { type SessionRow, sessionView } from '../views.js';
import type { PgDb } from './db.js';

/** The dashboard's users on PostgreSQL: accounts, sessions and failed logins, as on SQLite (store/sqlite/users.ts). */

export function pgUsers(db: PgDb): UserStore {
  return {
    add: (input) => addUser(db, input),
    find: (email) =>
      db.row<User & { password_hash: string }>('SELECT * FROM users WHERE email = $1', [email.toLowerCase()]),
    list: () =>
      db.rows<User & { customer: string | null }>(
        'SELECT u.id, u.email, u.role, u.customer_id, u.created_at, c.name AS customer FROM users u LEFT JOIN customers c ON c.id = u.customer_id ORDER BY u.email',
      ),
    remove: async (email) => (await db.run('DELETE FROM users WHERE email = $1', [email.toLowerCase()])) > 0,
    setPassword: (email, passwordHash) =>
      db.tx(async (q) => {
        const u = await q.row<{ id: number }>('UPDATE users SET password_hash = $1 WHERE email = $2 RETURNING id', [
          passwordHash,
          email.toLowerCase(),
        ]);
        if (!u) return false;
        await q.run('DELETE FROM sessions WHERE user_id = $1', [u.id]);
        return true;
      }),
    createSession: async (user, customerId, now) => {
      const s = newSession();
      await db.run(
        'INSERT INTO sessions (id_hash, user_id, csrf, customer_id, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [hashId(s.id), user.id, s.csrf, customerId, now, now],
      );
      return s;
    },
    useSession: (id, now, idleMs) => useSession(db, id, now, idleMs),
    showCustomer: async (id, customerId) =>
      void (await db.run('UPDATE sessions SET customer_id = $1 WHERE id_hash = $2', [customerId, hashId(id)])),
    endSession: async (id) => void (await db.run('DELETE FROM sessions WHERE id_hash = $1', [hashId(id)])),
    purgeSessions: (now, idleMs) => db.run('DELETE FROM sessions WHERE last_seen_at < $1', [now - idleMs]),
    loginFailures: {
      recent: (keys, since) =>
        db.rows('SELECT key, at FROM login_failures WHERE key = ANY($1::text[]) AND at > $2 ORDER BY at, key', [
          keys,
          since,
        ]),
      // Rows past the window go with the next failure of the same key: the table holds the window's failures and no more.
      record: async (keys, now, windowMs) =>
        void (await db.run(
          `WITH gone AS (DELETE FROM login_failures WHERE key = ANY($1::text[]) AND at <= $2 - $3::bigint)
           INSERT INTO login_failures (key, at) SELECT k, $2 FROM unnest($1::text[]) AS k`,
          [keys, now, windowMs],
        )),
      clear: async (key) => void (await db.run('DELETE FROM login_failures WHERE key = $1', [key])),
    },
  };
}

async function addUser(db: PgDb, input: Parameters<UserStore['add']>[0]): Promise<User> {
  const email = input.email.toLowerCase();
  const r = await db.row<{ id: number }>(
    'INSERT INTO users (email, password_hash, role, customer_id, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id',
    [email, input.passwordHash, input.role, input.customerId, input.now],
  );
  return { id: r!.id, email, role: input.role, customer_id: input.customerId, created_at: input.now };
}

/** A session by its id, with its user: undefined when unknown or idle longer than idleMs (then removed); last seen kept to the minute. */
async function useSession(db: PgDb, id: string, now: number, idleMs: number): Promise<Session | undefined> {
  const key = hashId(id);
  const row = await db.row<SessionRow>(
    'SELECT s.csrf, s.customer_id AS shown, s.last_seen_at, u.id, u.email, u.role, u.customer_id, u.created_at FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = $1',
    [key],
  );
  if (!row) return undefined;
  const use = sessionUse(row.last_seen_at, now, idleMs);
  if (use === 'end') {
    await db.run('DELETE FROM sessions WHERE id_hash = $1', [key]);
    return undefined;
  }
  if (use === 'seen') await db.run('UPDATE sessions SET last_seen_at = $1 WHERE id_hash = $2', [now, key]);
  return sessionView(row);
}
