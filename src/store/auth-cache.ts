import type { Db } from './db.js';
import { authenticate, type ApiKeyInfo } from './keys.js';
import { findSendingDomain, type SendingDomain } from './domains.js';

/** `auth_epoch` moves (by trigger) on every change to api_keys or domains, from any connection. */
export function readAuthEpoch(db: Db): string {
  return (db.statement("SELECT value FROM settings WHERE name = 'auth_epoch'").get() as { value: string } | undefined)?.value ?? '';
}

/**
 * Keys and sending domains cached in memory for the API. A checked lookup first reads
 * `auth_epoch` and drops the cache when it moved, so a revocation is refused on the very next
 * request. The send path looks up unchecked (no read on the event loop) and hands `epoch` to the
 * writer thread, which compares it with the epoch inside the accepting transaction and
 * re-verifies the key and the domain when it moved (see writer/ops.ts): the same guarantee, one
 * read fewer per request, and no window between the check and the commit.
 */
export class AuthCache {
  private current = '';
  private keys = new Map<string, ApiKeyInfo | undefined>();
  private domains = new Map<string, SendingDomain | undefined>();
  private static readonly MAX = 10_000;

  constructor(private readonly db: Db) {}

  /** The epoch the cached entries are at least as new as. */
  get epoch(): string {
    if (this.current === '') this.refresh();
    return this.current;
  }

  /** Reads the epoch now; drops the cache if it moved. */
  refresh(): void {
    this.observe(readAuthEpoch(this.db));
  }

  /** An epoch read elsewhere (the writer's transaction): drops the cache if it moved. */
  observe(epoch: string): void {
    if (epoch !== this.current) {
      this.current = epoch;
      this.keys.clear();
      this.domains.clear();
    }
  }

  /** Same answer as keys.authenticate (constant-time compare included), remembered per key text. */
  key(presented: string, checked = true): ApiKeyInfo | undefined {
    if (checked) this.refresh();
    else void this.epoch; // entries must not predate the epoch handed on with them
    if (this.keys.has(presented)) return this.keys.get(presented);
    const info = authenticate(this.db, presented);
    // Only well-formed, known keys are remembered: garbage cannot grow the map.
    if (info && this.keys.size < AuthCache.MAX) this.keys.set(presented, info);
    return info;
  }

  domain(name: string, checked = true): SendingDomain | undefined {
    if (checked) this.refresh();
    else void this.epoch;
    if (this.domains.has(name)) return this.domains.get(name);
    const d = findSendingDomain(this.db, name);
    if (d && this.domains.size < AuthCache.MAX) this.domains.set(name, d);
    return d;
  }
}
