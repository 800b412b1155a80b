import type { Db } from './db.js';
import { authenticate, type ApiKeyInfo } from './keys.js';
import { findSendingDomain, type SendingDomain } from './domains.js';

/**
 * Keys and sending domains cached in memory for the accept path. Every lookup first reads
 * `auth_epoch`, which triggers bump on any change to api_keys or domains from any connection,
 * and drops the cache when it moved: a revocation is still refused on the very next request.
 */
export class AuthCache {
  private epoch = '';
  private keys = new Map<string, ApiKeyInfo | undefined>();
  private domains = new Map<string, SendingDomain | undefined>();
  private static readonly MAX = 10_000;

  constructor(private readonly db: Db) {}

  private fresh(): void {
    const now = (this.db.statement("SELECT value FROM settings WHERE name = 'auth_epoch'").get() as { value: string } | undefined)?.value ?? '';
    if (now !== this.epoch) {
      this.epoch = now;
      this.keys.clear();
      this.domains.clear();
    }
  }

  /** Same answer as keys.authenticate (constant-time compare included), remembered per key text. */
  key(presented: string): ApiKeyInfo | undefined {
    this.fresh();
    if (this.keys.has(presented)) return this.keys.get(presented);
    const info = authenticate(this.db, presented);
    // Only well-formed, known keys are remembered: garbage cannot grow the map.
    if (info && this.keys.size < AuthCache.MAX) this.keys.set(presented, info);
    return info;
  }

  domain(name: string): SendingDomain | undefined {
    this.fresh();
    if (this.domains.has(name)) return this.domains.get(name);
    const d = findSendingDomain(this.db, name);
    if (d && this.domains.size < AuthCache.MAX) this.domains.set(name, d);
    return d;
  }
}
