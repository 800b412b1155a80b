import { hashId, newSession } from '../credentials.js';
import { type Role, type Session, sessionUse, type User } from '../model.js';
import type { UserStore } from '../store.js';
import { type SessionRow, sessionView } from '../views.js';
import type { Db } from './db.js';

interface UserRow extends User {
  password_hash: string;
}

export function addUser(
  db: Db,
  input: { email: string; passwordHash: string; role: Role; customerId: number | null; now: number },
): User {
  const id = Number(
    db.run(
      'INSERT INTO users (email, password_hash, role, customer_id, created_at) VALUES (?, ?, ?, ?, ?)',
      input.email.toLowerCase(),
      input.passwordHash,
      input.role,
      input.customerId,
      input.now,
    ).lastInsertRowid,
  );
  return {
    id,
    email: input.email.toLowerCase(),
    role: input.role,
    customer_id: input.customerId,
    created_at: input.now,
  };
}

export function findUser(db: Db, email: string): UserRow | undefined {
  return db.get<UserRow>('SELECT * FROM users WHERE email = ?', email.toLowerCase());
}

export function listUsers(db: Db): Array<User & { customer: string | null }> {
  return db.all<User & { customer: string | null }>(
    'SELECT u.id, u.email, u.role, u.customer_id, u.created_at, c.name AS customer FROM users u LEFT JOIN customers c ON c.id = u.customer_id ORDER BY u.email',
  );
}

/** Removes the user and with it every session of theirs. */
export function removeUser(db: Db, email: string): boolean {
  return db.run('DELETE FROM users WHERE email = ?', email.toLowerCase()).changes > 0;
}

/** Sets a new password and ends every session of the user. */
export function setPassword(db: Db, email: string, passwordHash: string): boolean {
  return db.tx(() => {
    const u = findUser(db, email);
    if (!u) return false;
    db.run('UPDATE users SET password_hash = ? WHERE id = ?', passwordHash, u.id);
    db.run('DELETE FROM sessions WHERE user_id = ?', u.id);
    return true;
  });
}

export function createSession(db: Db, user: User, customerId: number, now: number): { id: string; csrf: string } {
  const { id, csrf } = newSession();
  db.run(
    'INSERT INTO sessions (id_hash, user_id, csrf, customer_id, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?)',
    hashId(id),
    user.id,
    csrf,
    customerId,
    now,
    now,
  );
  return { id, csrf };
}

/**
 * The live session with this id, its idle clock reset; undefined if unknown or idle for longer
 * than `idleMs` (then it is deleted). The last-seen time is written at most once a minute.
 */
export function useSession(db: Db, id: string, now: number, idleMs: number): Session | undefined {
  const key = hashId(id);
  const row = db.get<SessionRow>(
    'SELECT s.csrf, s.customer_id AS shown, s.last_seen_at, u.id, u.email, u.role, u.customer_id, u.created_at FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ?',
    key,
  );
  if (!row) return undefined;
  const use = sessionUse(row.last_seen_at, now, idleMs);
  if (use === 'end') {
    db.run('DELETE FROM sessions WHERE id_hash = ?', key);
    return undefined;
  }
  if (use === 'seen') db.run('UPDATE sessions SET last_seen_at = ? WHERE id_hash = ?', now, key);
  return sessionView(row);
}

export function showCustomer(db: Db, id: string, customerId: number): void {
  db.run('UPDATE sessions SET customer_id = ? WHERE id_hash = ?', customerId, hashId(id));
}

export function endSession(db: Db, id: string): void {
  db.run('DELETE FROM sessions WHERE id_hash = ?', hashId(id));
}

/** Deletes sessions idle for longer than `idleMs`. */
export function purgeSessions(db: Db, now: number, idleMs: number): number {
  return db.run('DELETE FROM sessions WHERE last_seen_at < ?', now - idleMs).changes;
}

export function sqliteUsers(db: Db): UserStore {
  return {
    add: async (input) => addUser(db, input),
    find: async (email) => findUser(db, email),
    list: async () => listUsers(db),
    remove: async (email) => removeUser(db, email),
    setPassword: async (email, hash) => setPassword(db, email, hash),
    createSession: async (user, customerId, now) => createSession(db, user, customerId, now),
    useSession: async (id, now, idleMs) => useSession(db, id, now, idleMs),
    showCustomer: async (id, customerId) => showCustomer(db, id, customerId),
    endSession: async (id) => endSession(db, id),
    purgeSessions: async (now, idleMs) => purgeSessions(db, now, idleMs),
  };
}
