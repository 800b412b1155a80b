import { grantOf, type UsageRow, usageSql, useOf, type WarmupStore, type WarmupWant } from '../warmup-store.js';
import type { Db } from './db.js';

// The warm-up's use per UTC day, source address and destination (store/warmup-store.ts), as
// PostgreSQL's (store/pg/warmup.ts). One process writes: a transaction reads and adds at once.

function reserve(db: Db, day: string, wants: readonly WarmupWant[]): number[] {
  return db.tx(() =>
    wants.map((w) => {
      const row = db.get<{ used: number }>(
        'SELECT used FROM warmup_use WHERE day = ? AND ip = ? AND destination = ?',
        day,
        w.ip,
        w.destination,
      );
      const grant = grantOf(w, row?.used ?? 0);
      if (grant > 0)
        db.run(
          `INSERT INTO warmup_use (day, ip, destination, used) VALUES (?, ?, ?, ?)
           ON CONFLICT (day, ip, destination) DO UPDATE SET used = used + excluded.used`,
          day,
          w.ip,
          w.destination,
          grant,
        );
      return grant;
    }),
  );
}

export function sqliteWarmup(db: Db): WarmupStore {
  return {
    reserve: async (day, wants) => reserve(db, day, wants),
    giveBack: async (day, ip, destination, n) => {
      if (n > 0)
        db.run(
          'UPDATE warmup_use SET used = max(0, used - ?) WHERE day = ? AND ip = ? AND destination = ?',
          n,
          day,
          ip,
          destination,
        );
    },
    usage: async (day) => db.all<UsageRow>(usageSql('?'), day).map(useOf),
  };
}
