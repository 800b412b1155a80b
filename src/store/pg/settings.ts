import { randomBytes } from 'node:crypto';
import type { PgDb } from './db.js';

/** The secret `name`, created with `bytes` random bytes by the first node to ask for it. */
export async function secret(db: PgDb, name: string, bytes: number): Promise<Buffer> {
  await db.run('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    randomBytes(bytes).toString('base64'),
  ]);
  return Buffer.from(
    (await db.row<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name]))!.value,
    'base64',
  );
}
