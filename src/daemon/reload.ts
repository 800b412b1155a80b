import { readFileSync } from 'node:fs';
import type { SMTPServer } from 'smtp-server';
import type { Config } from '../config/schema.js';
import { inboundSettings, outboundSettings, sendSettings, submissionSettings } from '../config/settings.js';
import type { Logger } from '../lib/logger.js';
import type { Scheduler } from '../outbound/scheduler.js';
import type { Store } from '../store/store.js';
import type { Settings } from './context.js';

/**
 * What SIGHUP can change in the running daemon, part by part: the keys a part takes, and how the
 * new values are handed to it (its settings built again from the new configuration, or a call).
 * The one place that decides what is reloadable: every other changed key needs a restart. A key
 * may reach more than one part (bounces.*: inbound reports and delivery replies).
 */
interface Reloader {
  part: string;
  keys: string[];
  apply(next: Config, changed: Set<string>, parts: ReloadParts): void;
}

export interface ReloadParts {
  log: Logger;
  settings: Settings;
  store: Store;
  scheduler: Scheduler;
  listener: SMTPServer;
  submission: SMTPServer[];
}

const BOUNCES = ['bounces.suppress_mailbox_full', 'bounces.suppress_disabled'];

export const RELOADERS: readonly Reloader[] = [
  { part: 'log', keys: ['log.level'], apply: (next, _, { log }) => void (log.level = next.log.level) },
  {
    part: 'inbound listener',
    keys: ['inbound.rate_per_minute', 'inbound.monthly_limit', 'smtp.tls.cert', 'smtp.tls.key', ...BOUNCES],
    apply: (next, changed, { settings, listener }) => {
      // The new certificate first (a file that cannot be read leaves everything as it was), then
      // the settings the listener reads per connection, STARTTLS offered or not among them.
      if (
        (changed.has('smtp.tls.cert') || changed.has('smtp.tls.key')) &&
        next.smtp['tls.cert'] &&
        next.smtp['tls.key']
      )
        listener.updateSecureContext({
          key: readFileSync(next.smtp['tls.key']),
          cert: readFileSync(next.smtp['tls.cert']),
        });
      settings.inbound.current = inboundSettings(next);
    },
  },
  {
    part: 'outbound',
    keys: [
      'outbound.concurrency_per_domain',
      'outbound.messages_per_connection',
      'outbound.messages_per_minute',
      'outbound.destination_limits',
      'outbound.hold',
      ...BOUNCES,
    ],
    apply: (next, changed, { settings, scheduler, log }) => {
      settings.outbound.current = outboundSettings(next);
      if (changed.has('outbound.hold')) {
        log.warn(
          { hold: next.outbound.hold },
          next.outbound.hold
            ? 'outbound queue held: nothing is sent until outbound.hold = false'
            : 'outbound queue released',
        );
        scheduler.kick();
      }
    },
  },
  {
    part: 'send API',
    keys: [
      'limits.max_recipients',
      'limits.idempotency_ttl',
      'limits.send_per_minute',
      'limits.send_per_day',
      'limits.send_per_month',
      'limits.sandbox_send_per_minute',
      'limits.sandbox_send_per_day',
      'limits.sandbox_send_per_month',
    ],
    apply: (next, _, { settings }) => void (settings.send.current = sendSettings(next)),
  },
  {
    part: 'submission',
    keys: ['submission.tls.cert', 'submission.tls.key'],
    apply: (next, _, { settings, submission }) => {
      // As the inbound listener: the new certificate for the next handshake on both listeners,
      // and STARTTLS offered or not from the next connection on.
      const s = next.submission;
      if (s['tls.cert'] && s['tls.key']) {
        const context = { key: readFileSync(s['tls.key']), cert: readFileSync(s['tls.cert']) };
        for (const server of submission) server.updateSecureContext(context);
      }
      settings.submission.current = submissionSettings(next);
    },
  },
  {
    part: 'store',
    keys: ['limits.max_store_bytes'],
    apply: (next, _, { store }) => store.admin.setMaxBytes(next.limits.max_store_bytes),
  },
];

/** Every key SIGHUP applies without a restart. */
export const RELOADABLE_KEYS: ReadonlySet<string> = new Set(RELOADERS.flatMap((r) => r.keys));

/** Every key of a configuration as "section.key" → its value as JSON, to compare two. */
function flatConfig(c: Config): Map<string, string> {
  const out = new Map<string, string>();
  for (const [section, keys] of Object.entries(c as unknown as Record<string, Record<string, unknown>>))
    for (const [key, value] of Object.entries(keys)) out.set(`${section}.${key}`, JSON.stringify(value));
  return out;
}

/** SIGHUP's reload: the changed keys found against what runs, the reloadable ones applied part by part (RELOADERS), the rest named as needing a restart. */
export function reloader(
  config: Config,
  log: Logger,
  parts: ReloadParts,
): (next: Config) => { applied: string[]; restart_needed: string[] } {
  // Each key's running value ("section.key" → JSON): the configuration as started, with what reloads applied.
  const running = flatConfig(config);
  return (next) => {
    const after = flatConfig(next);
    const changed = [...after.keys()].filter((k) => running.get(k) !== after.get(k));
    const applied = changed.filter((k) => RELOADABLE_KEYS.has(k));
    const restart = changed.filter((k) => !RELOADABLE_KEYS.has(k));
    // Said at the old level, before a new level could hide it.
    log.info({ applied, restart_needed: restart }, 'configuration reloaded');
    const keys = new Set(applied);
    for (const step of RELOADERS) if (step.keys.some((k) => keys.has(k))) step.apply(next, keys, parts);
    // The next reload compares against what runs now.
    for (const k of applied) running.set(k, after.get(k)!);
    return { applied, restart_needed: restart };
  };
}
