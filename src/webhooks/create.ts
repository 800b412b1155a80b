import { readFileSync } from 'node:fs';
import type { Config } from '../config/schema.js';
import type { Clock } from '../lib/clock.js';
import { createResolver } from '../lib/dns.js';
import type { WebhookStore } from '../store/store.js';
import { SafeFetch } from './safe-fetch.js';
import { WebhookService } from './service.js';

/** The webhook sender the daemon and the CLI share: guarded fetch, dns.servers, config's CAs. */
export function createWebhookService(
  store: WebhookStore,
  config: Config,
  clock: Clock,
  resolver = createResolver(config.dns.servers),
): WebhookService {
  const w = config.webhooks;
  const fetch = new SafeFetch({
    resolver,
    allowPrivate: w.allow_private_targets,
    timeoutMs: w.timeout,
    extraCa: w.tls_ca_file ? [readFileSync(w.tls_ca_file, 'utf8')] : [],
  });
  return new WebhookService(store, clock, fetch, resolver, w.allow_private_targets, w.secret_grace);
}
