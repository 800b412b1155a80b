/**
 * The one error the store interface throws for infrastructure: the store cannot be reached, or
 * cannot write now (SQLite: disk full, I/O error, locked past the busy timeout; PostgreSQL: the
 * server is down, restarting, refusing connections, out of disk). The API answers it 503
 * `store_unavailable` and SMTP 451 4.3.0: the request was not accepted and may be retried.
 * `code` is the engine's own code, for the log.
 */
export class StoreUnavailable extends Error {
  readonly storeUnavailable = true;
  constructor(
    message: string,
    readonly code?: string,
    /** Out of space rather than out of reach (SMTP 452 4.3.1 "insufficient system storage"). */
    readonly full = false,
  ) {
    super(message);
    this.name = 'StoreUnavailable';
  }
}

/**
 * Whether e means "the store cannot take this now": a StoreUnavailable, or the SQLite engine's
 * errors that say so (disk full, I/O error, locked past the busy timeout, read-only), which its
 * synchronous code and writer thread throw as they are.
 */
export function isStoreUnavailable(e: unknown): boolean {
  if ((e as { storeUnavailable?: unknown })?.storeUnavailable === true) return true;
  const code = (e as { code?: unknown })?.code;
  return (
    typeof code === 'string' &&
    (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_BUSY' || code === 'SQLITE_READONLY')
  );
}

/** Out of space (disk full) rather than out of reach: SMTP says 452 4.3.1 then, 451 4.3.0 otherwise. */
export function isStoreFull(e: unknown): boolean {
  return (e as { full?: unknown })?.full === true || (e as { code?: unknown })?.code === 'SQLITE_FULL';
}
