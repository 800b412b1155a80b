// The API as the tests use it: send a message, read it back, pick its events.
import { type Json, request } from './http.js';

/** POST /api/v1/emails; the message_id, or an error naming the answer when it is not a 202. */
export async function sendEmail(baseUrl: string, key: string, body: Record<string, unknown>): Promise<string> {
  const r = await request(`${baseUrl}/api/v1/emails`, { key, body });
  if (r.status !== 202) throw new Error(`send failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.message_id as string;
}

/** GET /api/v1/emails/:message_id: the message with its recipients and events. */
export async function getEmail(baseUrl: string, key: string, id: string): Promise<Json> {
  return (await request(`${baseUrl}/api/v1/emails/${encodeURIComponent(id)}`, { key })).body;
}

/**
 * A short message from a@example.com to `to`, delivered at once by a daemon started with
 * manualDelivery, and read back.
 */
export async function sendAndDeliver(
  s: { url: string; daemon: { scheduler: { drain(): Promise<void> } } },
  key: string,
  to: string,
): Promise<Json> {
  const id = await sendEmail(s.url, key, { from: 'a@example.com', to, subject: 's', text_body: 'b' });
  await s.daemon.scheduler.drain();
  return getEmail(s.url, key, id);
}

/** A message's events of one type, optionally for one recipient. */
export function eventsOf(m: Json, type: string, recipient?: string): Json[] {
  return (m.events as Json[]).filter((e) => e.type === type && (!recipient || e.data.recipient === recipient));
}

/** A message's recipient by address. */
export function recipientOf(m: Json, address: string): Json {
  return (m.recipients as Json[]).find((r) => r.address === address);
}
