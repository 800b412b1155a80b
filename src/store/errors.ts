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

export function isStoreUnavailable(e: unknown): e is StoreUnavailable {
  return (e as { storeUnavailable?: unknown })?.storeUnavailable === true;
}
