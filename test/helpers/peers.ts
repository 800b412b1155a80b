import t from 'tap';

/**
 * Runs a test file's body when its real peer (Postfix, Chromium) is here. Without it the file is
 * skipped with the reason, except where POSTHASTE_REQUIRE_PEERS is set (CI): there it fails.
 */
export async function withPeer(unavailable: string | null, body: () => Promise<void>): Promise<void> {
  if (!unavailable) return body();
  if (process.env.POSTHASTE_REQUIRE_PEERS) t.fail(`POSTHASTE_REQUIRE_PEERS is set but ${unavailable}`);
  else t.plan(0, `skipped: ${unavailable}`);
}
