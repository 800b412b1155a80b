import type { AcceptInput, AcceptResult, AcceptedResponse } from './messages.js';
import type { StoredInbound } from './inbound.js';
import type { Report, ReportEnvelope } from '../domain/report.js';

/*
 * The inputs and results of the store's units of work that take more than a row (accepting a
 * message or a batch, receiving a message): plain data, since on SQLite they cross to the writer
 * thread (store/sqlite/writer) and on PostgreSQL they become one transaction's parameters.
 */

/** One inbound transaction: messages for receiving domains, and the report it is, for each of posthaste's addresses it came to. */
export interface ReceiveInput {
  /** The messages to store; their bytes are `raw`, sent once for all of them. */
  stores: Array<Omit<StoredInbound, 'raw'>>;
  /** What the message says as a report (read once), when it came to a return path or the feedback address. */
  report: Report | null;
  reports: ReportEnvelope[];
  raw: Uint8Array;
  secret: Uint8Array;
  now: number;
}

export interface SendInput extends AcceptInput {
  /** auth_epoch the API's cached key and domain were at least as new as. */
  authEpoch: string;
}
export type SendCommit = (AcceptResult | { kind: 'key_revoked' } | { kind: 'domain_unknown' } | { kind: 'domain_unverified' }) & {
  /** auth_epoch as this transaction saw it: the API drops its cache when it moved. */
  authEpoch: string;
};

/** A batch item: ready to store, or the error it already got (validation, its domain). */
export type BatchItem = Omit<AcceptInput, 'idempotency'> | { error: { code: string; message: string; details: Record<string, string[]> } };
export type BatchItemResult = AcceptedResponse | { error: { code: string; message: string; details: Record<string, string[]> } };

export interface BatchInput {
  items: BatchItem[];
  customerId: number;
  apiKeyId: string;
  /** For the whole batch: a retry gets the first response, items and all. */
  idempotency?: { key: string; hash: Buffer; ttlMs: number };
  authEpoch: string;
  now: number;
}
export type BatchResult = ({ kind: 'accepted'; response: { data: BatchItemResult[] } } | { kind: 'replay'; status: number; response: unknown } | { kind: 'conflict' } | { kind: 'key_revoked' }) & {
  authEpoch: string;
};
