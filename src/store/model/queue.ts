import type { RequestFormat } from './messages.js';

/** The store's model for the delivery queue: a claimed recipient and its message, as delivery reads them. */

/** A claimed recipient with what delivery needs. */
export interface Claimed {
  id: number;
  messageRowId: number;
  address: string;
  domain: string;
  attempts: number;
}

export interface QueuedMessage {
  id: number;
  customerId: number;
  messageId: string;
  /** The id in the Message-ID field when it is not messageId (the sender's own), bare; else null. */
  headerMessageId: string | null;
  sandbox: boolean;
  fromHeader: string;
  senderDomain: string;
  subject: string;
  metadata: Record<string, string>;
  request: Buffer;
  /** `mime`: request is the message itself, signed as it is; `json`: the send request, composed at the first attempt. */
  requestFormat: RequestFormat;
  raw: Buffer | null;
  createdAt: number;
  tags: string[];
}
