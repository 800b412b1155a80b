/**
 * How long `waitFor` waits by default. A bound, not a guess at how long things take: a wait ends
 * as soon as its condition holds, so only a failing test waits this long. It is generous because
 * the suite runs two files at once on two cores, often beside other work: there a delivery that
 * takes milliseconds alone (the first one also starts the signing threads) has taken over 5 s.
 */
export const WAIT_MS = 30_000;

/**
 * Waiting in tests: for a condition, never for a guessed time. `waitFor` polls until the probe
 * gives a value (anything but undefined, null or false) and fails naming what it waited for.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  ms = WAIT_MS,
  everyMs = 10,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A fixed wait: only where a test must show that nothing happens in that time. */
export function quiet(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
