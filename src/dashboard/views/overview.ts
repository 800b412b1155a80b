import type { WarmupAddressStatus } from '../../domain/warmup.js';
import type { HeldDestination, NodeView, Overview } from '../../store/model.js';
import { chart } from '../chart.js';
import { noun } from '../format.js';
import { type Html, html } from '../html.js';
import { replyBlock, when } from './common.js';

/** What the overview's counters count, as their labels say it (singular, plural). */
const COUNTED: Record<keyof Overview['last24h'], [string, string]> = {
  accepted: ['recipient accepted', 'recipients accepted'],
  delivered: ['recipient delivered', 'recipients delivered'],
  // Every deferral: a recipient deferred twice counts twice.
  deferred: ['deferred attempt', 'deferred attempts'],
  // A bounce after delivery (a DSN) counts here as well as in delivered.
  bounced: ['recipient bounced', 'recipients bounced'],
  complained: ['complaint', 'complaints'],
};

/** The overview: activity over 24 hours and 7 days, counted per recipient, and the queue now; for an administrator, the nodes running and the source addresses. */
export function overviewBody(
  o: Overview,
  now: number,
  nodes?: NodeView[],
  held?: HeldDestination[],
  addresses?: WarmupAddressStatus[],
): Html {
  const stat = (label: string, v: number | string | Html) =>
    html`<div class="stat"><b>${v}</b><span>${label}</span></div>`;
  const count = (n: number, [one, many]: [string, string]) => stat(noun(n, one, many), n);
  const activity = (counts: Overview['last24h']) =>
    (Object.keys(COUNTED) as Array<keyof typeof COUNTED>).map((k) => count(counts[k], COUNTED[k]));
  return html`<p class="muted">Counted per recipient: a message to three addresses is three recipients.</p>
        <h2>Last 24 hours</h2>
        <div class="stats">${activity(o.last24h)}</div>
        <h2>Last 7 days</h2>
        <div class="stats">${activity(o.last7d)}</div>
        <div class="card">${chart(o.hourly)}</div>
        <h2>Now</h2>
        <div class="stats">${count(o.queue.queued, ['recipient queued', 'recipients queued'])}${count(o.queue.deferred, ['recipient waiting to retry', 'recipients waiting to retry'])}${stat(
          'when the oldest waiting to retry was accepted',
          when(o.oldestDeferredAt, now),
        )}${count(o.webhookBacklog, ['webhook delivery waiting', 'webhook deliveries waiting'])}</div>
        ${o.throttled.length ? throttledBody(o.throttled, now) : ''}
        ${held?.length ? heldBody(held, now) : ''}
        ${addresses?.length ? addressesBody(addresses) : ''}
        ${nodes ? nodesBody(nodes, now) : ''}`;
}

/** The live nodes on the store (several on one PostgreSQL: docs/cluster.md), with the work each holds now. */
function nodesBody(rows: NodeView[], now: number): Html {
  return html`<h2>Nodes</h2>
        <div class="card"><p class="muted">The posthaste processes running on this store. A node that stops heartbeating for longer than its lease is dead; the others take over what it held.</p>
        <table><thead><tr><th>Node</th><th>Started</th><th>Last heartbeat</th><th>Recipients held</th><th>Webhook deliveries held</th><th class="opt">Id</th></tr></thead><tbody>
        ${rows.map(
          (n) =>
            html`<tr><td>${n.name}</td><td>${when(Date.parse(n.started_at), now)}</td><td>${when(Date.parse(n.heartbeat_at), now)}</td><td>${n.claims.recipients}</td><td>${n.claims.webhook_deliveries}</td><td class="opt"><code>${n.id}</code></td></tr>`,
        )}
        </tbody></table></div>`;
}

/** Receivers that asked us to slow down: mail to them goes at a reduced pace until they accept again. */
function throttledBody(rows: Overview['throttled'], now: number): Html {
  return html`<h2>Destinations slowed down</h2>
        <div class="card"><p class="muted">These receivers answered "try later" or "too fast" (a 421 or a rate limit). Mail to them goes with fewer connections, after a pause that grows while they keep refusing; full speed comes back by itself as they accept again.</p>
        <table><thead><tr><th>Destination</th><th>Paused until</th><th>Connections</th><th class="opt">Since</th><th>Last refusal</th></tr></thead><tbody>
        ${rows.map((d) => html`<tr><td>${d.destination}</td><td>${d.pausedUntil > now ? when(d.pausedUntil, now) : 'not paused'}</td><td>${d.connections}</td><td class="opt">${when(d.since, now)}</td><td class="wrap">${replyBlock(d.reason)}</td></tr>`)}
        </tbody></table></div>`;
}

/** Destinations an administrator holds (`posthaste queue hold --destination`): nothing is sent to them until released. */
function heldBody(rows: HeldDestination[], now: number): Html {
  return html`<h2>Destinations held</h2>
        <div class="card"><p class="muted">Nothing is sent to these destinations, mail accepted for them meanwhile included, until <code>posthaste queue release --destination NAME</code>.</p>
        <table><thead><tr><th>Destination</th><th>Held since</th></tr></thead><tbody>
        ${rows.map((d) => html`<tr><td>${d.destination}</td><td>${when(d.held_at, now)}</td></tr>`)}
        </tbody></table></div>`;
}

/** The pools' source addresses (docs/delivery.md, "Warm-up"): each one's warm-up day and cap, and today's use (UTC day). */
function addressesBody(rows: WarmupAddressStatus[]): Html {
  return html`<h2>Source addresses</h2>
        <div class="card"><p class="muted">The addresses of outbound.pools. One warming up may send each destination at most its cap a day (UTC), rising day by day along outbound.warmup_schedule; mail over it goes from another address of its pool with room, or waits for the next day.</p>
        <table><thead><tr><th>Address</th><th>Pool</th><th class="opt">EHLO name</th><th>Warm-up</th><th>Cap per destination today</th><th>Sent today</th><th>Most to one destination</th></tr></thead><tbody>
        ${rows.map(
          (a) =>
            html`<tr><td><code>${a.ip}</code></td><td>${a.pool}</td><td class="opt">${a.ehlo}</td><td>${a.day === null ? 'full volume' : `day ${a.day} of ${a.days}`}</td><td>${a.cap ?? 'none'}</td><td>${a.sent} ${noun(a.sent, 'message')} to ${a.destinations} ${noun(a.destinations, 'destination')}</td><td>${a.highest ? `${a.highest.destination}: ${a.highest.used}${a.cap === null ? '' : ` of ${a.cap}`}` : '-'}</td></tr>`,
        )}
        </tbody></table></div>`;
}
