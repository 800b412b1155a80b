import { randomBytes } from 'node:crypto';
import type { Db } from './db.js';

/** A random secret created on first use and kept in the store (e.g. the return-path token key). */
export function secret(db: Db, name: string, bytes = 32): Buffer {
  const get = () => db.get<{ value: string }>('SELECT value FROM settings WHERE name = ?', name);
  let row = get();
  if (!row) {
    db.run('INSERT OR IGNORE INTO settings (name, value) VALUES (?, ?)', name, randomBytes(bytes).toString('base64'));
    row = get()!;
  }
  return Buffer.from(row.value, 'base64');
}
