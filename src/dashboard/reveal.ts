/**
 * A secret made by a POST (a new API key, a webhook signing secret), held in memory for the
 * session's next page: the POST redirects (a reload does not create another key) and the page
 * after it shows the secret once. Never stored; gone after one look or two minutes.
 */
export class OneTimeReveal {
  private readonly held = new Map<string, { id: string; label: string; secret: string; at: number }>();

  constructor(private readonly ttlMs = 120_000) {}

  put(sessionId: string, r: { id: string; label: string; secret: string }, now: number): void {
    for (const [k, v] of this.held) if (now - v.at > this.ttlMs) this.held.delete(k);
    this.held.set(sessionId, { ...r, at: now });
  }

  take(sessionId: string, now: number): { id: string; label: string; secret: string } | undefined {
    const r = this.held.get(sessionId);
    this.held.delete(sessionId);
    return r && now - r.at <= this.ttlMs ? r : undefined;
  }
}
