import type { SMTPServerSession } from 'smtp-server';
import type { Config } from '../config/schema.js';
import type { Live, SendSettings, SubmissionSettings } from '../config/settings.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Hold, MemoryBudget } from '../lib/memory-budget.js';
import type { AuthCache } from '../store/auth-cache.js';
import type { ApiKeyInfo } from '../store/model.js';
import type { Store } from '../store/store.js';

/** What the submission listeners are built from (the composition root hands it in). */
export interface SubmissionDeps {
  store: Pick<Store, 'messages' | 'suppressions'>;
  /** The API's cache of keys and sending domains: one cache, one auth epoch, for both ways of sending. */
  auth: AuthCache;
  config: Config;
  /** limits.max_recipients, as the API reads it (reloadable). */
  send: Live<SendSettings>;
  /** What a reload can change here: STARTTLS offered or not. */
  settings: Live<SubmissionSettings>;
  clock: Clock;
  log: Logger;
  /** limits.message_memory, shared with the API and the inbound listener. */
  budget: MemoryBudget;
  isShuttingDown: () => boolean;
  /** A message was committed: the scheduler can go. */
  onAccepted?: () => void;
  /** Counts AUTH results (success, failure, throttled) and messages by result (Prometheus). */
  onAuth?: (result: 'success' | 'failure' | 'throttled') => void;
  onResult?: (result: string) => void;
}

/** One envelope recipient, as RCPT TO gave it (its domain in lower-case ASCII). */
export interface Rcpt {
  address: string;
  domain: string;
}

export type Session = SMTPServerSession & {
  /** smtp-server reads this, when set, instead of the server's disabledCommands (per connection). */
  disabledCommands?: string[];
  /** The API key AUTH took, and the auth epoch the cache was at when it did (the commit checks the key again if the epoch moved since). */
  key?: ApiKeyInfo;
  authEpoch?: string;
  /** The key was found revoked at a commit: nothing more is taken on this connection. */
  revoked?: boolean;
  rcpts?: Rcpt[];
  /** The memory the message being received holds: released when it is done with, or when the client goes. */
  hold?: Hold;
};

/** An SMTP refusal to hand smtp-server: `text` starts with the enhanced status code. */
export const smtpError = (code: number, text: string): Error => Object.assign(new Error(text), { responseCode: code });
