import pg from 'pg';
import type { WakeupEvents, WakeupKind } from '../store.js';
import type { PgDb } from './db.js';

export const CHANNEL = 'posthaste_wakeup';
export const KINDS: readonly WakeupKind[] = ['outbound', 'webhooks'];

/** The wait before the first attempt to open a lost connection again, and the most it grows to. */
export const FIRST_WAIT_MS = 500;
export const MAX_WAIT_MS = 30_000;

/**
 * A node's LISTEN connection (store/pg/wakeups.ts): a connection of its own, not from the pool,
 * with the pool's credentials (PgDb.client). Lost, or not made at the start, it is opened again by
 * itself, after a wait that doubles from half a second up to 30 seconds; every loss and every
 * failed attempt is reported (`events.lost`, which the daemon logs: at most one line per wait),
 * and so is the return (`events.back`). When it is back, `on` is called for each kind: what was
 * said while it was down was not heard.
 */
export class WakeupListener {
  private closed = false;
  private client: pg.Client | null = null;
  private retry: NodeJS.Timeout | null = null;
  /** Failed attempts since the connection was last up (0: it was up, or this is the first). */
  private attempts = 0;

  constructor(
    private readonly db: PgDb,
    private readonly self: string,
    private readonly on: (kind: WakeupKind) => void,
    private readonly events: WakeupEvents,
  ) {}

  /** Listens, or (the database away, the credentials refused) says so and keeps trying. */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (e) {
      this.down(e as Error);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const c = this.client;
    this.client = null;
    if (c) await Promise.race([c.end().catch(() => undefined), new Promise((r) => setTimeout(r, 2_000).unref())]);
  }

  private async connect(): Promise<void> {
    const db = this.db;
    const c = new pg.Client({
      ...db.client,
      application_name: `${db.client.application_name ?? 'posthaste'} (listen)`,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    // Until it listens, a failure is the caller's (connect throws); after, it is a loss, once.
    let listening = false;
    const onLost = (e?: Error) => {
      if (!listening || this.closed) return;
      listening = false;
      this.client = null;
      this.down(e ?? new Error('connection ended'));
    };
    c.on('error', onLost);
    c.on('end', () => onLost());
    c.on('notification', (m) => {
      const [kind, from] = (m.payload ?? '').split(' ');
      if (from !== this.self && (KINDS as readonly string[]).includes(kind ?? '')) this.on(kind as WakeupKind);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}`);
    } catch (e) {
      // Not awaited: ending a client whose connection never opened may never settle.
      c.end().catch(() => undefined);
      throw e;
    }
    if (this.closed) {
      c.end().catch(() => undefined);
      return;
    }
    listening = true;
    this.client = c;
  }

  /** Down (lost, or an attempt failed): said, and tried again after the wait. */
  private down(e: Error): void {
    if (this.closed || this.retry) return;
    const inMs = Math.min(FIRST_WAIT_MS * 2 ** this.attempts, MAX_WAIT_MS);
    this.events.lost?.(e, { attempt: this.attempts, inMs });
    this.attempts++;
    this.retry = setTimeout(() => void this.again(), inMs);
    this.retry.unref();
  }

  private async again(): Promise<void> {
    this.retry = null;
    if (this.closed) return;
    try {
      await this.connect();
    } catch (e) {
      this.down(e as Error);
      return;
    }
    if (this.closed) return;
    const failed = this.attempts - 1;
    this.attempts = 0;
    this.events.back?.(failed);
    // What was said while the connection was down was not heard: look now.
    for (const kind of KINDS) this.on(kind);
  }
}
