import type { DestinationThrottle } from '../../domain/destinations.js';
import { THROTTLE_COLUMNS, type ThrottleRow, throttleView } from '../views.js';
import type { Db } from './db.js';

export type { DestinationThrottle };

export function saveThrottle(db: Db, t: DestinationThrottle, now: number): void {
  db.run(
    `INSERT INTO destination_throttles (destination, connections, strikes, paused_until, reason, since, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (destination) DO UPDATE SET connections = excluded.connections, strikes = excluded.strikes, paused_until = excluded.paused_until,
       reason = excluded.reason, since = excluded.since, updated_at = excluded.updated_at`,
    t.destination,
    t.connections,
    t.strikes,
    t.pausedUntil,
    JSON.stringify(t.reason),
    t.since,
    now,
  );
}

export function clearThrottle(db: Db, destination: string): void {
  db.run('DELETE FROM destination_throttles WHERE destination = ?', destination);
}

/** Every throttled destination, the most recently refused first. */
export function listThrottles(db: Db): DestinationThrottle[] {
  const rows = db.all<ThrottleRow>(
    `SELECT ${THROTTLE_COLUMNS} FROM destination_throttles ORDER BY updated_at DESC, destination`,
  );
  return rows.map(throttleView);
}
