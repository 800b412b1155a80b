import { type QuotaExceeded, quotaDetails, quotaMessage } from './quotas.js';

/** API error codes and their HTTP statuses (docs/api.md, Errors). Mapped to HTTP once, at the edge. */
export const ERROR_STATUS = {
  invalid_json: 400,
  unauthorized: 401,
  domain_not_verified: 403,
  customer_paused: 403,
  insufficient_scope: 403,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  recipient_suppressed: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
  store_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type Details = Record<string, string[]>;

export class ApiError extends Error {
  constructor(
    public readonly code: ErrorCode,
    message: string,
    public readonly details: Details = {},
    /** Seconds the client should wait before it tries again (the Retry-After header), when the answer says so. */
    public readonly retryAfter?: number,
  ) {
    super(message);
  }
  get status(): number {
    return ERROR_STATUS[this.code];
  }
  toBody(): { error: { code: ErrorCode; message: string; details: Details } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

/**
 * Collects per-field problems so every problem is reported at once. At most `MAX_PROBLEMS` are
 * kept for `details`; the rest are only counted, so a request with a million bad entries gets an
 * answer of a few kilobytes, not of a hundred megabytes.
 */
export class Problems {
  static readonly MAX_PROBLEMS = 100;
  // Field names can come from the request (unknown keys, header names, metadata keys): a
  // null-prototype object keeps "__proto__" or "constructor" plain keys, never the prototype's.
  readonly details: Details = Object.create(null) as Details;
  /** Every problem found, those left out of `details` included. */
  count = 0;
  add(field: string, problem: string): void {
    if (++this.count > Problems.MAX_PROBLEMS) return;
    const list = Object.hasOwn(this.details, field) ? this.details[field]! : (this.details[field] = []);
    list.push(problem);
  }
  get empty(): boolean {
    return this.count === 0;
  }
  /** How many problems `details` leaves out. */
  get omitted(): number {
    return Math.max(0, this.count - Problems.MAX_PROBLEMS);
  }
}

/**
 * A queued message that can never be sent as it stands (its stored request cannot be read, or
 * its composed form breaks a rule of RFC 5322): trying again gives the same
 * answer, so delivery fails it at once instead of retrying until it expires.
 */
export class UnsendableMessage extends Error {}

export function validationError(p: Problems): ApiError {
  const first = Object.entries(p.details)[0]!;
  const message =
    p.count === 1
      ? `${first[0]} ${first[1][0]}`
      : `The request has ${p.count} problems; ${p.omitted > 0 ? `details lists the first ${Problems.MAX_PROBLEMS}` : 'see details'}.`;
  return new ApiError('validation_failed', message, p.details);
}

export function unknownDomain(name: string): ApiError {
  const p = new Problems();
  p.add('from', `${name} is not a domain of this account; add it with "posthaste domains add"`);
  return validationError(p);
}

export function unverifiedDomain(name: string): ApiError {
  return new ApiError(
    'domain_not_verified',
    `The sender domain ${name} is not verified yet; publish its DNS records and run "posthaste domains verify".`,
    {
      from: [`${name} is not verified`],
    },
  );
}

/**
 * Why a send is not taken (send/admit.ts decides the first, the store's transaction the others),
 * as a value each door says its own way.
 */
export type Refusal =
  | { kind: 'from_not_allowed'; allowed: string[] }
  | { kind: 'domain_unknown' }
  | { kind: 'domain_unverified' }
  | { kind: 'unsubscribe_unavailable' }
  | { kind: 'suppressed'; addresses: Array<{ address: string; field: string; reason: string }> }
  | { kind: 'customer_paused'; reason?: string | null }
  /**
   * A pool chosen for the send (the API's `pool`, submission's X-Posthaste-Pool) that this
   * customer may not choose: not configured (`configured` false), or neither among its allowed
   * pools nor its default.
   */
  | { kind: 'pool_not_allowed'; pool: string; configured: boolean; allowed: string[] }
  /** Over a send quota of the customer (domain/quotas.ts): 429 with Retry-After. */
  | { kind: 'rate_limited'; quota: QuotaExceeded };

/** Why a paused customer's send is refused, and who can resume it (the API's message; SMTP says the same). */
export function pausedText(reason: string | null | undefined): string {
  return `Sending is paused for this account${reason ? ` (${reason})` : ''}: nothing was queued. An administrator of this posthaste server resumes it ("posthaste customers resume", or the dashboard's Customers page).`;
}

/** Why a chosen pool is refused, and which this customer may choose (the API's message; SMTP says the same). */
export function poolText(r: Extract<Refusal, { kind: 'pool_not_allowed' }>): string {
  const may =
    r.allowed.length > 0 ? `this customer may choose ${r.allowed.join(', ')}` : 'this customer may choose none';
  return r.configured
    ? `pool ${r.pool} is not one this customer may choose (${may}: "posthaste customers set --allow-pools")`
    : `pool ${r.pool} is not configured on this server (outbound.pools; ${may})`;
}

export function refusal(r: Refusal, domain: string): ApiError {
  switch (r.kind) {
    case 'from_not_allowed':
      return new ApiError(
        'forbidden',
        `This API key may send only from ${r.allowed.join(', ')} (its from_domains); ${domain} is not one of them.`,
        { from: [`${domain} is not among this key's from_domains`] },
      );
    case 'domain_unknown':
      return unknownDomain(domain);
    case 'domain_unverified':
      return unverifiedDomain(domain);
    case 'unsubscribe_unavailable':
      return new ApiError(
        'validation_failed',
        'This server offers no one-click unsubscribe: unsubscribe.public_url is not configured; nothing was queued.',
        { unsubscribe: ['needs unsubscribe.public_url in the server configuration (docs/delivery.md)'] },
      );
    case 'customer_paused':
      return new ApiError('customer_paused', pausedText(r.reason));
    case 'pool_not_allowed':
      return new ApiError('validation_failed', `${poolText(r)}; nothing was queued.`, { pool: [poolText(r)] });
    case 'suppressed': {
      const p = new Problems();
      for (const s of r.addresses) p.add(s.field, `${s.address} is on the suppression list (${s.reason})`);
      return new ApiError(
        'recipient_suppressed',
        `${r.addresses.length} recipient(s) are on the suppression list; nothing was queued.`,
        p.details,
      );
    }
    case 'rate_limited':
      return new ApiError('rate_limited', quotaMessage(r.quota), quotaDetails(r.quota), r.quota.retryAfter);
  }
}
