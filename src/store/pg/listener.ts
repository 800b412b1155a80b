import pg from 'pg';
import type { WakeupKind } from '../store.js';
import type { PgDb } from './db.js';

export const CHANNEL = 'posthaste_wakeup';
export const KINDS: readonly WakeupKind[] = ['outbound', 'webhooks'];

type ListenEvents = { lost?: (e: Error) => void; back?: () => void };

/**
 * A node's LISTEN connection (store/pg/wakeups.ts): a connection of its own, not from the pool,
 * opened again by itself when lost, after a wait that doubles from half a second up to 30 seconds.
 * When it is back, `on` is called for each kind: what was said while it was down was not heard.
 */
export class WakeupListener {
  private closed = false;
  private client: pg.Client | null = null;
  private retry: NodeJS.Timeout | null = null;
  private wait = 500;

  constructor(
    private readonly db: PgDb,
    private readonly self: string,
    private readonly on: (kind: WakeupKind) => void,
    private readonly events: ListenEvents,
  ) {}

  /** Listens, or (the database away) says it is lost and keeps trying. */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (e) {
      this.events.lost?.(e as Error);
      this.reconnect();
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
    let lost = false;
    const onLost = (e?: Error) => {
      if (lost || this.closed) return;
      lost = true;
      this.client = null;
      this.events.lost?.(e ?? new Error('connection ended'));
      this.reconnect();
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
      lost = true; // not yet listening: the caller tries again
      // Not awaited: ending a client whose connection never opened may never settle.
      c.end().catch(() => undefined);
      throw e;
    }
    if (this.closed) {
      c.end().catch(() => undefined);
      return;
    }
    this.client = c;
  }

  private reconnect(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(async () => {
      this.retry = null;
      try {
        await this.connect();
        this.wait = 500;
        this.events.back?.();
        // What was said while the connection was down was not heard: look now.
        for (const kind of KINDS) this.on(kind);
      } catch {
        this.wait = Math.min(this.wait * 2, 30_000);
        this.reconnect();
      }
    }, this.wait);
    this.retry.unref();
  }
}
