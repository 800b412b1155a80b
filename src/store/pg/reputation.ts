import { REPUTATION_KINDS, type ReputationCounts, type ReputationKind, zeroCounts } from '../../domain/reputation.js';
import {
  okStanding,
  type ReputationStore,
  type Standing,
  type StandingChange,
  standingRow,
} from '../reputation-store.js';
import type { PgDb, Q } from './db.js';
import { insertEvents } from './transitions.js';

/*
 * A customer's reputation on PostgreSQL (store/reputation-store.ts): its counters are rows of
 * activity_hourly, sharded as the overview's (written by transitions.ts), summed on read; its
 * standing is customer_reputation, changed under the row's lock so a change and its event happen once.
 */

const HOUR = 3_600_000;
const KINDS = `(${REPUTATION_KINDS.map((k) => `'${k}'`).join(', ')})`;
const STANDING = 'customer_id, state, paused_at, reason, paused_by, changed_at, since';

async function standing(q: Q | PgDb, customerId: number, lock = false): Promise<Standing> {
  return (
    (await q.row<Standing>(
      `SELECT ${STANDING} FROM customer_reputation WHERE customer_id = $1${lock ? ' FOR UPDATE' : ''}`,
      [customerId],
    )) ?? okStanding(customerId)
  );
}

async function sums(q: Q | PgDb, customerId: number, fromHour: number): Promise<ReputationCounts> {
  const out = zeroCounts();
  const rows = await q.rows<{ kind: ReputationKind; n: number }>(
    `SELECT kind, sum(count)::bigint AS n FROM activity_hourly WHERE customer_id = $1 AND hour >= $2 AND kind IN ${KINDS} GROUP BY kind`,
    [customerId, fromHour],
  );
  for (const r of rows) out[r.kind] = Number(r.n);
  return out;
}

async function counts(db: PgDb, customerId: number, fromHour: number) {
  const s = await standing(db, customerId);
  const sinceHour = Math.floor(s.since / HOUR);
  const c = await sums(db, customerId, Math.max(fromHour, sinceHour));
  if (sinceHour >= fromHour && s.since > 0) {
    const base = await db.row<Record<string, number>>(
      'SELECT base_outcome, base_hard, base_expired, base_delivered, base_complained FROM customer_reputation WHERE customer_id = $1',
      [customerId],
    );
    for (const k of REPUTATION_KINDS) c[k] = Math.max(0, c[k] - Number(base?.[`base_${k.slice(4)}`] ?? 0));
  }
  return { counts: c, standing: s };
}

async function change(db: PgDb, input: StandingChange): Promise<boolean> {
  return db.tx(async (q) => {
    // The customer's row locked first: two nodes judging at once change it one after the other.
    await q.run('SELECT id FROM customers WHERE id = $1 FOR UPDATE', [input.customerId]);
    if ((await standing(q, input.customerId, true)).state !== input.from) return false;
    const row = standingRow(input);
    await q.run(
      `INSERT INTO customer_reputation (customer_id, state, paused_at, reason, paused_by, changed_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (customer_id) DO UPDATE SET state = excluded.state, paused_at = excluded.paused_at,
         reason = excluded.reason, paused_by = excluded.paused_by, changed_at = excluded.changed_at`,
      [input.customerId, row.state, row.paused_at, row.reason, row.paused_by, row.changed_at],
    );
    if (input.from === 'paused') {
      const c = await sums(q, input.customerId, Math.floor(input.now / HOUR));
      await q.run(
        `UPDATE customer_reputation SET since = $2, base_outcome = $3, base_hard = $4, base_expired = $5,
           base_delivered = $6, base_complained = $7 WHERE customer_id = $1`,
        [input.customerId, input.now, c.rep_outcome, c.rep_hard, c.rep_expired, c.rep_delivered, c.rep_complained],
      );
    }
    if (input.event)
      await insertEvents(
        q,
        [{ customerId: input.customerId, ...input.event, messageRowId: null, recipientId: null }],
        input.now,
      );
    return true;
  });
}

export function pgReputation(db: PgDb): ReputationStore {
  return {
    standing: (id) => standing(db, id),
    paused: async () =>
      (
        await db.rows<{ id: number }>('SELECT customer_id AS id FROM customer_reputation WHERE paused_at IS NOT NULL')
      ).map((r) => Number(r.id)),
    standings: () => db.rows<Standing>(`SELECT ${STANDING} FROM customer_reputation ORDER BY customer_id`),
    hourActivity: async (hour) => {
      const rows = await db.rows<{ id: number; n: number }>(
        `SELECT c.id, (SELECT coalesce(sum(a.count), 0)::bigint FROM activity_hourly a
          WHERE a.customer_id = c.id AND a.hour = $1 AND a.kind IN ${KINDS}) AS n FROM customers c`,
        [hour],
      );
      return new Map(rows.map((r) => [Number(r.id), Number(r.n)]));
    },
    counts: (id, fromHour) => counts(db, id, fromHour),
    change: (input) => change(db, input),
  };
}
