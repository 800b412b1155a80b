import type { SMTPServerDataStream } from 'smtp-server';
import { type Hold, LARGE_MESSAGE_BYTES, type MemoryBudget } from '../lib/memory-budget.js';
import { BareNewlineCheck } from './smuggling.js';

/** What DATA brought: the chunks kept (none past `max`), all the bytes sent, and why it may not be taken. */
export interface DataRead {
  chunks: Buffer[];
  size: number;
  /** A bare CR or LF was sent (SMTP smuggling, docs/inbound.md): refused once drained. */
  bareNewline: boolean;
  /** smtp-server counted more than its `size`. */
  sizeExceeded: boolean;
}

/**
 * Reads DATA through the bare-newline check, for the inbound listener and the submission
 * listeners alike (docs/inbound.md, "Memory"). Past `max` bytes nothing more is kept. Past
 * LARGE_MESSAGE_BYTES the message holds its bytes in the shared memory budget, taken as they
 * arrive; while they do not fit, reading pauses (the sender waits on TCP). Small messages, nearly
 * all mail, never touch it.
 */
export function readData(
  stream: SMTPServerDataStream,
  session: { hold?: Hold },
  budget: MemoryBudget,
  max: number,
): Promise<DataRead> {
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
    check.on('end', () => resolve({ chunks, size, bareNewline: check.found, sizeExceeded: stream.sizeExceeded }));
  });
}
