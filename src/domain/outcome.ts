/** Delivery outcomes are values (docs/architecture.md); SMTP codes are mapped to them once, at the SMTP edge. */
export interface Reply {
  code: number;
  enhanced_code: string;
  message: string;
  classification: string;
}

export type Outcome =
  | { kind: 'delivered'; reply: Reply; mx: string; tls: boolean }
  /** Temporary: the recorder turns it into a retry, or into an `expired` bounce past max_queue_time. */
  | { kind: 'deferred'; reply: Reply; mx?: string }
  | { kind: 'bounced'; bounceType: 'hard' | 'async' | 'expired'; reply: Reply }
  /** On the suppression list when its turn came: nothing is sent. */
  | { kind: 'suppressed'; reason: string };

/** Classifications of a hard bounce that say the address itself is bad, so it is suppressed. */
const ADDRESS_PROBLEMS = new Set(['unknown_recipient', 'mailbox_full', 'dns_failure', 'other']);

/**
 * A hard bounce suppresses the recipient (docs/delivery.md). A 5xx that blames the sender or the message
 * (spam_block, policy, message_too_large, rate_limited, tls_failure) does not: suppressing every
 * recipient because our IP was listed would silence a customer's whole list.
 */
export function suppressesRecipient(o: Outcome): boolean {
  return o.kind === 'bounced' && o.bounceType !== 'expired' && ADDRESS_PROBLEMS.has(o.reply.classification);
}

/** Delay before the next attempt after `attempts` failed ones (1-based); the last step repeats. */
export function retryDelay(schedule: number[], attempts: number): number {
  return schedule[Math.min(Math.max(attempts, 1), schedule.length) - 1]!;
}
