/** The store's model for accounts: customers, API keys, domains, suppressions and dashboard users. */

import type { KeyGrant } from '../../domain/key-scopes.js';

/** A row of customers. */
export interface Customer {
  id: number;
  name: string;
  created_at: number;
}

export const DEFAULT_CUSTOMER = 'default';

/** A customer's own send quotas (domain/quotas.ts), recipients per window; null: the server's default, 0: none. */
export interface CustomerQuotas {
  perMinute: number | null;
  perDay: number | null;
  perMonth: number | null;
}

/** Recipients accepted in each current quota window (per minute, day, month), production and sandbox keys apart. */
export interface QuotaUse {
  live: number[];
  sandbox: number[];
}

/** Which pools of source addresses a customer's mail leaves from (docs/delivery.md, "Sending identities"). */
export interface CustomerPools {
  /** Its mail's pool when a message names none; null: the configured default. */
  default_pool: string | null;
  /** The pools it may choose per send. */
  allowed_pools: string[];
}

/** A change to a customer's pools: a field left out keeps its value. */
export interface CustomerPoolsChange {
  defaultPool?: string | null;
  allowedPools?: string[];
}

/** A customer's name: 1-63 letters, digits, "_", "." or "-", starting with a letter or digit. */
export const CUSTOMER_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/i;

export type KeyKind = 'production' | 'sandbox';

/** A row of api_keys without its hash (the hash never leaves the store), its scopes and restrictions read (domain/key-scopes.ts). */
export interface ApiKeyInfo extends KeyGrant {
  id: string;
  customer_id: number;
  name: string;
  kind: KeyKind;
  created_at: number;
  revoked_at: number | null;
  /** When a message was last sent with it. */
  last_used_at?: number | null;
}

/** A row of domains (the columns' meaning: migrations 001, 003 and 007). */
export interface DomainRow {
  id: number;
  customer_id: number;
  name: string;
  verified_at: number | null;
  /** 1 while the inbound listener accepts mail for it. */
  receiving: number;
  verification_token: string;
  dkim_selector: string;
  dkim_private_key: string;
  dkim_public_key: string;
  /** A key made by rotate-dkim, waiting for its record to be found in DNS; null: none. */
  next_dkim_selector: string | null;
  next_dkim_private_key: string | null;
  next_dkim_public_key: string | null;
  /** The selector signed with before the last switch, and when the switch was. */
  previous_dkim_selector: string | null;
  previous_dkim_public_key: string | null;
  dkim_switched_at: number | null;
  /** The domain's own inbound limits; null: the server's. */
  inbound_rate_per_minute: number | null;
  inbound_monthly_limit: number | null;
  /**
   * The return-path host (`bounces.<domain>`) verification last found pointing at the server's
   * return path domain: the envelope sender of this domain's mail is on it; null: it does not hold.
   */
  return_path_host: string | null;
  created_at: number;
}

export const DKIM_SELECTOR = 'posthaste';

export type SendingDomain = Pick<DomainRow, 'id' | 'customer_id' | 'name' | 'verified_at'>;

/** The events a change of a domain's verified state writes (domain/events.ts). */
export type DomainEventType = 'domain.verified' | 'domain.verification_failed';

/** What a verification found, for DomainStore.setVerification. */
export interface VerificationInput {
  verified: boolean;
  now: number;
  records: Array<{ purpose: string; name: string; found: boolean }>;
}

/** A verified state change as its event: the type, if the state changed, and the event's data. */
export function verificationEvent(
  d: { name: string; verified_at: number | null },
  input: VerificationInput,
): { type: DomainEventType; at: number | null; data: Record<string, unknown> } | null {
  const was = d.verified_at === null ? null : Number(d.verified_at);
  const at = input.verified ? (was ?? input.now) : null;
  if (at === was) return null;
  return {
    type: at === null ? 'domain.verification_failed' : 'domain.verified',
    at,
    data: { domain: d.name, verified_at: at === null ? null : new Date(at).toISOString(), records: input.records },
  };
}

export type SuppressionReason = 'hard_bounce' | 'spam_complaint' | 'manual' | 'unsubscribe';

export interface SuppressionRow {
  address: string;
  reason: SuppressionReason;
  message_id: string | null;
  created_at: number;
}

/** A suppression a sandbox key's simulator fired: recipient.suppressed, with the real list untouched. */
export interface SimulatedSuppression {
  address: string;
  reason: SuppressionReason;
  message_id: string;
  created_at: number;
}

export type Role = 'admin' | 'customer';

export interface User {
  id: number;
  email: string;
  role: Role;
  /** The customer a customer's user belongs to; null for an admin. */
  customer_id: number | null;
  created_at: number;
}

export interface Session {
  user: User;
  csrf: string;
  /** The customer shown. */
  customerId: number;
}

/** A session's last-seen time is written at most once a minute (a dashboard page makes several requests). */
export const SESSION_SEEN_STEP_MS = 60_000;

/**
 * What using a session does, on both engines: `end` when it has been idle longer than `idleMs`
 * (its row is removed, and it is no session), `seen` when its last-seen time is more than a
 * minute old (written again), else `keep`.
 */
export function sessionUse(lastSeenAt: number, now: number, idleMs: number): 'end' | 'seen' | 'keep' {
  if (now - lastSeenAt > idleMs) return 'end';
  return now - lastSeenAt > SESSION_SEEN_STEP_MS ? 'seen' : 'keep';
}
