import type { Db } from './db.js';
import { listThrottles } from './destinations.js';

export interface Status {
  queue: Record<string, number>;
  oldest_deferred: string | null;
  next_attempt: string | null;
  webhooks: Record<string, number>;
  inbound: { last_24h: number; total: number; reports_unmatched: number };
  messages: number;
  /** Destinations slowed down because they refused us (adaptive backoff), with the refusal. */
  throttled: Array<{ destination: string; connections: number; refusals: number; paused_until: string; since: string; reason: { code: number; enhanced_code: string; message: string } }>;
}

/** What `posthaste status` shows: queue depth by state, oldest deferred, webhook backlog, inbound counts. */
export function status(db: Db, now: number): Status {
  const byState = (sql: string) => Object.fromEntries((db.sqlite.prepare(sql).all() as Array<{ state: string; n: number }>).map((r) => [r.state, r.n]));
  const iso = (v: unknown) => (typeof v === 'number' ? new Date(v).toISOString() : null);
  return {
    queue: byState('SELECT state, COUNT(*) AS n FROM recipients GROUP BY state'),
    oldest_deferred: iso(db.sqlite.prepare("SELECT MIN(m.created_at) FROM recipients r JOIN messages m ON m.id = r.message_id WHERE r.state = 'deferred'").pluck().get()),
    next_attempt: iso(db.sqlite.prepare("SELECT MIN(next_attempt_at) FROM recipients WHERE state IN ('queued', 'deferred')").pluck().get()),
    webhooks: byState('SELECT state, COUNT(*) AS n FROM webhook_deliveries GROUP BY state'),
    inbound: {
      last_24h: db.sqlite.prepare('SELECT COUNT(*) FROM inbound_messages WHERE created_at > ?').pluck().get(now - 86_400_000) as number,
      total: db.sqlite.prepare('SELECT COUNT(*) FROM inbound_messages').pluck().get() as number,
      reports_unmatched: db.sqlite.prepare('SELECT COUNT(*) FROM inbound_reports WHERE recipient_id IS NULL').pluck().get() as number,
    },
    messages: db.sqlite.prepare('SELECT COUNT(*) FROM messages').pluck().get() as number,
    throttled: listThrottles(db).map((d) => ({
      destination: d.destination,
      connections: d.connections,
      refusals: d.strikes,
      paused_until: new Date(d.pausedUntil).toISOString(),
      since: new Date(d.since).toISOString(),
      reason: { code: d.reason.code, enhanced_code: d.reason.enhanced_code, message: d.reason.message },
    })),
  };
}
