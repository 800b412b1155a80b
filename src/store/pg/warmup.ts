import { grantOf, type UsageRow, usageSql, useOf, type WarmupStore, type WarmupWant } from '../warmup-store.js';
import type { PgDb } from './db.js';

// The warm-up's use per UTC day, source address and destination (store/warmup-store.ts), as
// SQLite's (store/sqlite/warmup.ts). Each want's row is locked (made first if need be) before its
// use is read, so two nodes reserving the last room at once take turns: the second reads what
// the first left, and together they never pass the cap.

/** "a/b" before "a/c": the order rows are locked in, the same on every node (no deadlock). */
const byRow = (a: WarmupWant, b: WarmupWant) =>
  a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : a.destination < b.destination ? -1 : a.destination > b.destination ? 1 : 0;

async function reserve(db: PgDb, day: string, wants: readonly WarmupWant[]): Promise<number[]> {
  if (wants.length === 0) return [];
  const order = wants.map((w, i) => ({ w, i })).sort((a, b) => byRow(a.w, b.w));
  const grants: number[] = new Array(wants.length).fill(0);
  await db.tx(async (q) => {
    for (const { w, i } of order) {
      // The row, made or found, locked by this transaction with its latest committed use.
      const row = await q.row<{ used: string }>(
        `INSERT INTO warmup_use AS u (day, ip, destination, used) VALUES ($1, $2, $3, 0)
         ON CONFLICT (day, ip, destination) DO UPDATE SET used = u.used
         RETURNING used`,
        [day, w.ip, w.destination],
      );
      const grant = grantOf(w, Number(row!.used));
      if (grant > 0)
        await q.run('UPDATE warmup_use SET used = used + $4 WHERE day = $1 AND ip = $2 AND destination = $3', [
          day,
          w.ip,
          w.destination,
          grant,
        ]);
      grants[i] = grant;
    }
  });
  return grants;
}

export function pgWarmup(db: PgDb): WarmupStore {
  return {
    reserve: (day, wants) => reserve(db, day, wants),
    giveBack: async (day, ip, destination, n) => {
      if (n > 0)
        await db.run(
          'UPDATE warmup_use SET used = GREATEST(0, used - $4) WHERE day = $1 AND ip = $2 AND destination = $3',
          [day, ip, destination, n],
        );
    },
    usage: async (day) => (await db.rows<UsageRow>(usageSql('$1'), [day])).map(useOf),
  };
}
