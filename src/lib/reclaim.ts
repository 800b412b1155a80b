import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Messages at least this large are followed by a collection (at most one per `MIN_INTERVAL_MS`). */
export const LARGE_BYTES = 256 * 1024;
/** Messages at least this large are always followed by one: each leaves several times its size behind. */
export const HUGE_BYTES = 4 * 1024 * 1024;
const MIN_INTERVAL_MS = 2000;
/**
 * Small messages add up: every this many bytes of them count as one large message. Each leaves
 * copies behind too (a delivered 2.8 KB message about 15 KB of Buffers: its stored request, the
 * signed bytes, the SMTP client's chunks), and at hundreds a second V8 let them pile up to 60-70 MB
 * between its own collections (measured draining 20,000 messages).
 */
export const MANY_BYTES = 4 * 1024 * 1024;

let collect: (() => void) | null | undefined;
let last = 0;
/** Bytes of messages handled since the last collection. */
let handled = 0;
let scheduled = false;

/**
 * After a large message has been handled (or small ones adding up to MANY_BYTES), collect its
 * garbage now instead of when V8 gets round to it. The copies a large message leaves behind (SMTP
 * chunks, the joined message, parser and DKIM buffers, the writer's clone) are mostly off-heap
 * Buffers, which V8 only collects once about 64 MB of them have piled up: a few large messages
 * in a row pushed the daemon's peak resident memory from ~240 MB to ~270 MB (bad-input test). One
 * full collection costs ~10-30 ms on the event loop, paid at most once every two seconds after a
 * large message or 4 MiB of small ones, and after every
 * message of 4 MiB or more: each leaves several times its size behind (the body, its text, its
 * parsed form), and the memory budget lets the next one in as soon as it is done, so without a
 * collection between them two or three of them piled up.
 */
export function reclaimAfter(bytes: number, now = Date.now()): void {
  handled += bytes;
  if (
    (bytes < LARGE_BYTES && handled < MANY_BYTES) ||
    scheduled ||
    (bytes < HUGE_BYTES && now - last < MIN_INTERVAL_MS)
  )
    return;
  handled = 0;
  last = now;
  collect ??= gcFunction();
  if (!collect) return;
  const run = collect;
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    run();
  });
}

/** V8's full collection as a function, or null where it cannot be had. */
export function gcFunction(): (() => void) | null {
  try {
    // Node has no API for a collection without --expose-gc; the flag can be set at run time and a
    // new context then carries the `gc` function.
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    return typeof gc === 'function' ? gc : null;
  } catch {
    return null;
  }
}
