import { html, type Html } from '../html.js';
import type { Overview } from '../../store/overview.js';
import { chart } from '../chart.js';
import { replyBlock, when } from './common.js';

export function overviewBody(o: Overview, now: number): Html {
  const stat = (label: string, v: number | string | Html) => html`<div class="stat"><b>${v}</b><span>${label}</span></div>`;
  return html`<h2>Last 24 hours</h2>
        <div class="stats">${(['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const).map((k) => stat(k, o.last24h[k]))}</div>
        <h2>Last 7 days</h2>
        <div class="stats">${(['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const).map((k) => stat(k, o.last7d[k]))}</div>
        <div class="card">${chart(o.hourly)}</div>
        <h2>Now</h2>
        <div class="stats">${stat('queued', o.queue.queued)}${stat('deferred', o.queue.deferred)}${stat('oldest deferred', when(o.oldestDeferredAt, now))}${stat('webhook deliveries waiting', o.webhookBacklog)}</div>
        ${o.throttled.length ? throttledBody(o.throttled, now) : ''}`;
}

/** Receivers that asked us to slow down: mail to them goes at a reduced pace until they accept again. */
function throttledBody(rows: Overview['throttled'], now: number): Html {
  return html`<h2>Destinations slowed down</h2>
        <div class="card"><p class="muted">These receivers answered "try later" or "too fast" (a 421 or a rate limit). Mail to them goes with fewer connections, after a pause that grows while they keep refusing; full speed comes back by itself as they accept again.</p>
        <table><thead><tr><th>Destination</th><th>Paused until</th><th>Connections</th><th class="opt">Since</th><th>Last refusal</th></tr></thead><tbody>
        ${rows.map((d) => html`<tr><td>${d.destination}</td><td>${d.pausedUntil > now ? when(d.pausedUntil, now) : 'not paused'}</td><td>${d.connections}</td><td class="opt">${when(d.since, now)}</td><td class="wrap">${replyBlock(d.reason)}</td></tr>`)}
        </tbody></table></div>`;
}
