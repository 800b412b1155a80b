import { waitFor } from '../../support/wait.js';
import { getEmail, sendEmail } from './api.js';
import { runCli } from './cli.js';
import { startMailEnv } from './mail-env.js';

/** A recipient as `posthaste queue list --json` shows it. */
export interface QueueJson {
  message_id: string;
  recipient: string;
  destination: string;
  state: string;
  attempts: number;
  last_response: { code: number } | null;
  next_attempt_at: string | null;
}

/**
 * The queue commands' tests' environment: a daemon delivering on its own (real clock, retries an
 * hour apart, a poll a second) to one loopback MX, which answers 451 while `down` is set; the
 * domains a.example and b.example hosted by one provider (destination provider.test) and
 * other.test its own destination; the CLI on the daemon's configuration.
 */
export async function startQueueEnv() {
  const s = await startMailEnv({
    mxDomains: ['other.test'],
    daemon: { manualDelivery: false },
    outbound: 'retry_schedule = ["1h"]\npoll_interval = "1s"\n',
  });
  for (const [domain, host] of [
    ['a.example', 'mx1.provider.test'],
    ['b.example', 'mx2.provider.test'],
  ] as const) {
    s.dns.set(domain, { MX: [{ preference: 10, exchange: host }] });
    s.dns.set(host, { A: [s.mx.host] });
  }
  const env = {
    s,
    down: true,
    cli: (...args: string[]) => runCli(['--config', s.configPath, ...args]),
    received: (to: string) => s.mx.received.filter((m) => m.to.includes(to)).length,
    send: (to: string | string[]) =>
      sendEmail(s.url, s.key, { from: 'shop@example.com', to, subject: 'Order', text_body: 'Thanks' }),
    stateOf: async (id: string, address: string) =>
      ((await getEmail(s.url, s.key, id)).recipients as Array<{ address: string; state: string }>).find(
        (r) => r.address === address,
      )?.state,
    deferred: (id: string, address: string) =>
      waitFor(`${address} deferred`, async () => (await env.stateOf(id, address)) === 'deferred'),
  };
  s.mx.script = () => (env.down ? { rcpt: [451, '4.3.0 Service unavailable, try again later'] } : undefined);
  return env;
}
