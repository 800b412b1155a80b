import {
  REPUTATION_KINDS,
  type ReputationCounts,
  type ReputationKind,
  reputationKinds,
  zeroCounts,
} from '../../domain/reputation.js';
import type { Transition } from '../../domain/transitions.js';
import type { ReputationStore } from '../reputation-store.js';
import { okStanding, type Standing, type StandingChange, standingRow } from '../reputation-store.js';
import type { Db } from './db.js';
import { recordEvent } from './events.js';

/*
 * A customer's reputation on SQLite (store/reputation-store.ts): its counters, kept in
 * activity_hourly beside the overview's by the transaction that records the outcome, and its
 * standing in customer_reputation.
 */

const HOUR = 3_600_000;
const KINDS = `(${REPUTATION_KINDS.map((k) => `'${k}'`).join(', ')})`;
const STANDING = 'customer_id, state, paused_at, reason, paused_by, changed_at, since';

/** Adds what a transition counts for its customer's reputation (domain/reputation.ts), in the caller's transaction. */
export function countReputation(db: Db, m: { customerId: number; sandbox: boolean }, t: Transition, now: number): void {
  for (const kind of reputationKinds(m.sandbox, t))
    db.run(
      `INSERT INTO activity_hourly (customer_id, hour, kind, count) VALUES (?, ?, ?, 1)
       ON CONFLICT (customer_id, hour, kind) DO UPDATE SET count = count + 1`,
      m.customerId,
      Math.floor(now / HOUR),
      kind,
    );
}

export function standing(db: Db, customerId: number): Standing {
  return (
    db.get<Standing>(`SELECT ${STANDING} FROM customer_reputation WHERE customer_id = ?`, customerId) ??
    okStanding(customerId)
  );
}

export function paused(db: Db): number[] {
  return db
    .all<{ customer_id: number }>('SELECT customer_id FROM customer_reputation WHERE paused_at IS NOT NULL')
    .map((r) => r.customer_id);
}

export function standings(db: Db): Standing[] {
  return db.all<Standing>(`SELECT ${STANDING} FROM customer_reputation ORDER BY customer_id`);
}

/** Each customer's counters of `hour`, summed: one primary-key read per customer. */
export function hourActivity(db: Db, hour: number): Map<number, number> {
  const rows = db.all<{ id: number; n: number }>(
    `SELECT c.id, (SELECT coalesce(sum(a.count), 0) FROM activity_hourly a
      WHERE a.customer_id = c.id AND a.hour = ? AND a.kind IN ${KINDS}) AS n FROM customers c`,
    hour,
  );
  return new Map(rows.map((r) => [r.id, r.n]));
}

function sums(db: Db, customerId: number, fromHour: number): ReputationCounts {
  const out = zeroCounts();
  const rows = db.all<{ kind: ReputationKind; n: number }>(
    `SELECT kind, sum(count) AS n FROM activity_hourly WHERE customer_id = ? AND hour >= ? AND kind IN ${KINDS} GROUP BY kind`,
    customerId,
    fromHour,
  );
  for (const r of rows) out[r.kind] = r.n;
  return out;
}

/** The counters from `fromHour` and from the last resume (less what its hour held at the resume). */
export function counts(db: Db, customerId: number, fromHour: number): { counts: ReputationCounts; standing: Standing } {
  const s = standing(db, customerId);
  const sinceHour = Math.floor(s.since / HOUR);
  const c = sums(db, customerId, Math.max(fromHour, sinceHour));
  if (sinceHour >= fromHour && s.since > 0) {
    const base = db.get<Record<string, number>>(
      'SELECT base_outcome, base_hard, base_expired, base_delivered, base_complained FROM customer_reputation WHERE customer_id = ?',
      customerId,
    );
    for (const k of REPUTATION_KINDS) c[k] = Math.max(0, c[k] - (base?.[`base_${k.slice(4)}`] ?? 0));
  }
  return { counts: c, standing: s };
}

/** The change, with its event, if the state is still `from` (store/reputation-store.ts). */
export function change(db: Db, input: StandingChange): boolean {
  return db.tx(() => {
    if (standing(db, input.customerId).state !== input.from) return false;
    const row = standingRow(input);
    db.run(
      `INSERT INTO customer_reputation (customer_id, state, paused_at, reason, paused_by, changed_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (customer_id) DO UPDATE SET state = excluded.state, paused_at = excluded.paused_at,
         reason = excluded.reason, paused_by = excluded.paused_by, changed_at = excluded.changed_at`,
      input.customerId,
      row.state,
      row.paused_at,
      row.reason,
      row.paused_by,
      row.changed_at,
    );
    if (input.from === 'paused') restart(db, input.customerId, input.now);
    if (input.event) recordEvent(db, { customerId: input.customerId, ...input.event, now: input.now });
    return true;
  });
}

/** A resume: the counters start again now (what its hour held so far is kept, to be subtracted). */
function restart(db: Db, customerId: number, now: number): void {
  const c = sums(db, customerId, Math.floor(now / HOUR));
  db.run(
    `UPDATE customer_reputation SET since = ?, base_outcome = ?, base_hard = ?, base_expired = ?, base_delivered = ?,
       base_complained = ? WHERE customer_id = ?`,
    now,
    c.rep_outcome,
    c.rep_hard,
    c.rep_expired,
    c.rep_delivered,
    c.rep_complained,
    customerId,
  );
}

export function sqliteReputation(db: Db): ReputationStore {
  return {
    standing: async (id) => standing(db, id),
    standings: async () => standings(db),
    paused: async () => paused(db),
    hourActivity: async (hour) => hourActivity(db, hour),
    counts: async (id, fromHour) => counts(db, id, fromHour),
    change: async (input) => change(db, input),
  };
}
