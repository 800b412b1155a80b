import type { Resolver } from 'node:dns/promises';
import type { SMTPServerSession } from 'smtp-server';
import type { Config } from '../config/schema.js';
import type { InboundSettings, Live } from '../config/settings.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Hold, MemoryBudget } from '../lib/memory-budget.js';
import type { ReceivingDomain } from '../store/model.js';
import type { Store } from '../store/store.js';
import type { Route } from './route.js';

/** What the inbound listener is built from (the composition root hands it in). */
export interface ListenerDeps {
  store: Pick<Store, 'domains' | 'inbound' | 'dmarc' | 'suppressions'>;
  config: Config;
  /** What a reload can change here: the default inbound limits, the suppression policy, STARTTLS. */
  settings: Live<InboundSettings>;
  clock: Clock;
  log: Logger;
  resolver: Resolver;
  returnPathSecret: Buffer;
  /** The secret List-Unsubscribe tokens are made with (domain/unsubscribe.ts). */
  unsubscribeSecret: Buffer;
  isShuttingDown: () => boolean;
  /** Events were written: the webhook dispatcher can go. */
  onEvents?: () => void;
  /** Counts inbound results (Prometheus). */
  onResult?: (result: string) => void;
  /** limits.message_memory, shared with the API: DATA past LARGE_MESSAGE_BYTES takes its bytes from it. */
  budget: MemoryBudget;
}

/** A recipient RCPT TO accepted: where it goes, and for a receiving domain, the domain as the store has it. */
export type AcceptedRoute = Exclude<Route, { kind: 'refused' }> & { receiving?: ReceivingDomain };

/** What a session carries between the hooks (smtp-server's session, and these). */
export type Session = SMTPServerSession & {
  /** smtp-server reads this, when set, instead of the server's disabledCommands (per connection). */
  disabledCommands?: string[];
  /** The recipients of the transaction, as RCPT TO accepted them; MAIL FROM empties it. */
  routes?: AcceptedRoute[];
  /** The memory the message being received holds: released when it is done with, or when the client goes. */
  hold?: Hold;
};

/** An SMTP refusal to hand smtp-server: `message` starts with the enhanced status code. */
export const smtpError = (code: number, message: string): Error =>
  Object.assign(new Error(message), { responseCode: code });
