/** Row types for kysely; the column comments live in migrations/001_initial.ts. */
import type { Generated } from 'kysely';

export interface CustomersTable {
  id: Generated<number>;
  name: string;
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  customer_id: number;
  name: string;
  kind: 'production' | 'sandbox';
  hash: Buffer;
  created_at: number;
  revoked_at: number | null;
  last_used_at: Generated<number | null>;
}

export interface DomainsTable {
  id: Generated<number>;
  customer_id: number;
  name: string;
  verified_at: number | null;
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
  created_at: number;
}

export interface MessagesTable {
  id: Generated<number>;
  customer_id: number;
  message_id: string;
  api_key_id: string | null;
  sandbox: number;
  from_header: string;
  sender_domain: string;
  subject: string;
  metadata: string;
  request: Buffer | string; // the body as received (BLOB); JSON text in rows of earlier builds
  raw: Buffer | null;
  size: number | null;
  created_at: number;
  scheduled_at: number | null;
  /** JSON array of strings; null: none. */
  tags: string | null;
}

export type RecipientState = 'queued' | 'deferred' | 'delivered' | 'bounced' | 'complained' | 'suppressed' | 'canceled';

export interface RecipientsTable {
  id: Generated<number>;
  message_id: number;
  customer_id: number;
  address: string;
  domain: string;
  field: 'to' | 'cc' | 'bcc';
  state: RecipientState;
  attempts: number;
  next_attempt_at: number | null;
  last_response: string | null;
  created_at: number;
  updated_at: number;
}

export interface EventsTable {
  seq: Generated<number>;
  id: string;
  customer_id: number;
  type: string;
  message_id: number | null;
  recipient_id: number | null;
  created_at: number;
  body: string;
}

export interface SuppressionsTable {
  customer_id: number;
  address: string;
  reason: 'hard_bounce' | 'spam_complaint' | 'manual';
  message_id: number | null;
  created_at: number;
}

export interface IdempotencyKeysTable {
  customer_id: number;
  key: string;
  request_hash: Buffer;
  status: number;
  response: string;
  created_at: number;
}

export interface Database {
  customers: CustomersTable;
  api_keys: ApiKeysTable;
  domains: DomainsTable;
  messages: MessagesTable;
  recipients: RecipientsTable;
  /** In-flight delivery claims (migration 004). */
  recipient_claims: { recipient_id: number; worker: string; claimed_at: number };
  events: EventsTable;
  suppressions: SuppressionsTable;
  idempotency_keys: IdempotencyKeysTable;
  settings: { name: string; value: string };
  health: { id: number; at: number };
}
