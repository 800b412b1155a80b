/**
 * Waiting in tests: for a condition, never for a guessed time. `waitFor` polls until the probe
 * gives a value (anything but undefined, null or false) and fails naming what it waited for.
 */
export async function waitFor<T>(what: string, probe: () => T | undefined | null | false | Promise<T | undefined | null | false>, ms = 5000, everyMs = 10): Promise<T> {
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
