import type { SMTPServerDataStream } from 'smtp-server';
import { readData } from '../inbound/data.js';
import type { MemoryBudget } from '../lib/memory-budget.js';
import type { Session } from './session.js';

/** What DATA brought: the message's chunks as they arrived, or why it is not read any further. */
export type Received =
  | { kind: 'message'; chunks: Buffer[]; size: number }
  | { kind: 'bare_newline' }
  | { kind: 'too_big' };

/**
 * Reads DATA as the inbound listener does (docs/inbound.md, "Memory"): a bare CR or LF anywhere
 * refuses the message once it is drained (SMTP smuggling, docs/inbound.md); past `max` bytes
 * nothing more is kept (smtp-server's `size` with `rejectOversized` answers 552 whatever the
 * handler says); past LARGE_MESSAGE_BYTES the message holds its bytes in the memory budget shared
 * with the API and the inbound listener, and while they do not fit the connection is not read
 * (the client waits on TCP). The chunks are kept as they came: the stored message is built from
 * them once, not joined first.
 */
export async function receiveData(
  stream: SMTPServerDataStream,
  session: Session,
  budget: MemoryBudget,
  max: number,
): Promise<Received> {
  const got = await readData(stream, session, budget, max);
  if (got.bareNewline) return { kind: 'bare_newline' };
  if (got.sizeExceeded || got.size > max) return { kind: 'too_big' };
  return { kind: 'message', chunks: got.chunks, size: got.size };
}
