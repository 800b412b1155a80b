import { randomBytes } from 'node:crypto';
import type { Db } from './db.js';

/** A random secret created on first use and kept in the store (e.g. the return-path token key). */
export function secret(db: Db, name: string, bytes = 32): Buffer {
  const get = () =>
    db.statement('SELECT value FROM settings WHERE name = ?').get(name) as { value: string } | undefined;
  let row = get();
  if (!row) {
    db.statement('INSERT OR IGNORE INTO settings (name, value) VALUES (?, ?)').run(
      name,
      randomBytes(bytes).toString('base64'),
    );
    row = get()!;
  }
  return Buffer.from(row.value, 'base64');
}
