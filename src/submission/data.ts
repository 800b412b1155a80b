import type { SMTPServerDataStream } from 'smtp-server';
import { BareNewlineCheck } from '../inbound/smuggling.js';
import { LARGE_MESSAGE_BYTES, type MemoryBudget } from '../lib/memory-budget.js';
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
export function receiveData(
  stream: SMTPServerDataStream,
  session: Session,
  budget: MemoryBudget,
  max: number,
): Promise<Received> {
  return new Promise((resolve) => {
    const check = new BareNewlineCheck();
    const chunks: Buffer[] = [];
    let size = 0;
    stream.pipe(check);
    check.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) return; // drained, not kept
      chunks.push(c);
      if (size <= LARGE_MESSAGE_BYTES) return;
      const hold = (session.hold ??= budget.open());
      const need = size - LARGE_MESSAGE_BYTES - hold.held;
      if (hold.tryGrow(need)) return;
      check.pause();
      void hold.grow(need).then(() => check.resume());
    });
    check.on('end', () => {
      if (check.found) return resolve({ kind: 'bare_newline' });
      if (stream.sizeExceeded || size > max) return resolve({ kind: 'too_big' });
      resolve({ kind: 'message', chunks, size });
    });
  });
}
