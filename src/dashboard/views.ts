import { html, path, Html } from './html.js';
import type { PageContext } from './layout.js';
import type { DashboardDeps } from './server.js';
import { EVENT_TYPES } from '../domain/events.js';
import type { ApiKeyInfo, listKeys } from '../store/keys.js';
import type { DomainRow } from '../store/domains.js';
import type { getMessage, searchMessages } from '../store/messages.js';
import type { deliveriesOfMessage, listAttempts, Endpoint } from '../store/webhooks.js';
import type { domainRecords, verifyDomain } from '../domains/service.js';
import { endpointView } from '../webhooks/service.js';
import type { Overview } from '../store/overview.js';
import type { SuppressionRow } from '../store/suppressions.js';
import type { Customer } from '../store/customers.js';
import type { inboundSummary } from '../inbound/view.js';
import { chart } from './chart.js';
import { SEARCH_STATES } from '../domain/message-search.js';

/** A received message as its page needs it (the API's view of it). */
export type InboundPage = Record<string, unknown> & {
  headers?: Array<{ name: string; value: string }>;
  html?: string | null;
  text?: string | null;
  attachments?: Array<{ filename: string | null; content_type: string; size: number }>;
};

/** The dashboard's page bodies: what each page shows, built from values the routes looked up. */

/** A time as the pages show it: "2026-11-23 10:00:00Z", or a dash. */
export const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + 'Z');

export const csrf = (c: PageContext) => html`<input type="hidden" name="_csrf" value="${c.session.csrf}">`;

export function loginPage(next: string | undefined, error: string | undefined): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Log in · posthaste</title><link rel="stylesheet" href="/static/app.css"></head>
    <body><main class="login"><h1>posthaste</h1>${error ? html`<div class="flash error" role="alert">${error}</div>` : ''}
    <form method="post" action="/login"><input type="hidden" name="next" value="${next ?? '/'}">
      <label>E-mail address <input name="email" type="email" autocomplete="username" required autofocus></label>
      <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
      <button>Log in</button></form></main></body></html>`;
}

export function keysBody(c: PageContext, keys: ReturnType<typeof listKeys>): Html {
  return html`<div class="card"><form method="post" action="/keys" class="row">${csrf(c)}
      <label>Name <input name="name" maxlength="100" placeholder="e.g. web app"></label>
      <label>Kind <select name="kind"><option value="production">production (ph_live_)</option><option value="sandbox">sandbox (ph_test_)</option></select></label>
      <button>Create key</button></form></div>
    <div class="card"><table><thead><tr><th>Name</th><th>Kind</th><th>Handle</th><th class="opt">Created</th><th class="opt">Last send</th><th>State</th></tr></thead><tbody>
    ${
      keys.length
        ? keys.map(
            (k) => html`<tr><td>${k.name || '—'}</td><td>${k.kind}</td><td><code>${k.id}</code></td><td class="opt">${iso(k.created_at)}</td><td class="opt">${iso(k.last_used_at)}</td>
      <td>${k.revoked_at ? html`<span class="badge failed">revoked ${iso(k.revoked_at)}</span>` : html`<a href="${path`/keys/${k.id}/revoke`}">Revoke…</a>`}</td></tr>`,
          )
        : html`<tr><td colspan="6" class="muted">No keys yet.</td></tr>`
    }
    </tbody></table></div>`;
}

export function domainBody(
  c: PageContext,
  d: DomainRow,
  records: ReturnType<typeof domainRecords>,
  limits: { ratePerMinute: number | null; monthlyLimit: number | null },
  result: Awaited<ReturnType<typeof verifyDomain>> | undefined,
): Html {
  const check = (name: string, purpose: string) => result?.checks.find((k) => k.name === name && k.purpose === purpose);
  return html`${result ? html`<div class="${result.verified ? 'flash' : 'flash error'}" role="status">${result.verified ? 'Verified: every required record is published.' : 'Not verified yet: see the records marked missing.'}</div>` : ''}
    <div class="card"><p>${d.verified_at ? html`<span class="badge ok">verified</span> since ${iso(d.verified_at)}` : html`<span class="badge pending">not verified</span> sending from it is refused until it is`}</p>
      <form method="post" action="${path`/domains/${d.name}/verify`}" class="inline">${csrf(c)}<button>Verify now</button></form></div>
    <h2>DNS records to publish</h2>
    <div class="card"><table><thead><tr><th>Purpose</th><th>Type</th><th>Name</th><th>Value</th>${result ? html`<th>Found</th>` : ''}</tr></thead><tbody>
    ${records.map((r, i) => {
      const k = check(r.name, r.purpose);
      return html`<tr><td>${r.purpose}</td><td>${r.type}</td><td class="wrap"><code>${r.name}</code></td>
        <td class="wrap"><code id="${`rec-${i}`}">${r.value}</code> <button type="button" class="secondary" data-copy="${`rec-${i}`}" aria-label="${`Copy the ${r.purpose} record`}">Copy</button></td>
        ${result ? html`<td>${k?.found ? html`<span class="badge ok">found</span>` : html`<span class="badge missing">missing</span>${k?.seen.length ? html`<br><small class="wrap">seen: ${k.seen.join(' | ')}</small>` : ''}`}</td>` : ''}</tr>`;
    })}
    </tbody></table></div>
    <h2>Receiving</h2>
    <div class="card"><form method="post" action="${path`/domains/${d.name}/receiving`}" class="row">${csrf(c)}
      <label>Receive mail for ${d.name} <select name="receiving"><option value="1" ${d.receiving ? new Html('selected') : ''}>on</option><option value="0" ${d.receiving ? '' : new Html('selected')}>off</option></select></label><button>Save</button></form>
      <form method="post" action="${path`/domains/${d.name}/limits`}" class="row">${csrf(c)}
      <label>Messages per minute <input name="rate_per_minute" inputmode="numeric" value="${limits.ratePerMinute ?? ''}" placeholder="server default"></label>
      <label>Messages per month <input name="monthly_limit" inputmode="numeric" value="${limits.monthlyLimit ?? ''}" placeholder="server default"></label><button>Save limits</button></form></div>`;
}

export function webhooksBody(c: PageContext, endpoints: Endpoint[]): Html {
  return html`<div class="card"><form method="post" action="/webhooks">${csrf(c)}
      <div class="row"><label>URL <input name="url" type="url" required size="40" placeholder="https://example.com/hooks/posthaste"></label>
      <label>Description <input name="description" maxlength="500"></label></div>
      <fieldset><legend>Events (none ticked: all)</legend>${EVENT_TYPES.map((t) => html`<label><span><input type="checkbox" name="events[]" value="${t}"> ${t}</span></label>`)}</fieldset>
      <button>Add endpoint</button></form></div>
    <div class="card"><table><thead><tr><th>URL</th><th>Events</th><th>State</th><th class="opt">Created</th></tr></thead><tbody>
    ${
      endpoints.length
        ? endpoints.map(
            (e) => html`<tr><td class="wrap"><a href="${path`/webhooks/${e.id}`}">${e.url}</a><br><small class="muted">${e.description}</small></td><td>${e.events ? e.events.join(', ') : 'all'}</td>
      <td>${e.enabled ? html`<span class="badge ok">enabled</span>` : html`<span class="badge failed">disabled</span> ${e.disabledReason ?? ''}`}</td><td class="opt">${iso(e.createdAt)}</td></tr>`,
          )
        : html`<tr><td colspan="4" class="muted">No endpoints yet.</td></tr>`
    }
    </tbody></table></div>`;
}

export function endpointBody(c: PageContext, e: Endpoint, attempts: ReturnType<typeof listAttempts>, result: Awaited<ReturnType<DashboardDeps['webhooks']['test']>> | undefined): Html {
  const v = endpointView(e);
  return html`${result ? html`<div class="${result.success ? 'flash' : 'flash error'}" role="status"><p>${result.type} ${result.event_id}: ${result.status !== null ? `HTTP ${result.status}` : (result.error ?? 'no answer')} in ${result.durationMs} ms</p>${result.response ? html`<pre>${result.response}</pre>` : ''}</div>` : ''}
    <div class="card"><p class="wrap"><b>${e.url}</b></p><p>${e.description}</p><p>Events: ${(v.events as string[]).join(', ')}</p>
      <p>${e.enabled ? html`<span class="badge ok">enabled</span>` : html`<span class="badge failed">disabled</span> ${e.disabledReason ?? ''}`}</p>
      <form method="post" action="${path`/webhooks/${e.id}/test`}" class="row">${csrf(c)}<label>Event type <select name="type">${EVENT_TYPES.map((t) => html`<option>${t}</option>`)}</select></label><button>Send test event</button></form>
      <form method="post" action="${path`/webhooks/${e.id}/state`}" class="row">${csrf(c)}
        ${e.enabled ? html`<button name="action" value="disable" class="secondary">Disable</button>` : html`<button name="action" value="enable" class="secondary">Enable</button>`}
        <button name="action" value="delete" class="danger">Delete endpoint</button></form></div>
    <h2>Recent deliveries</h2>
    <div class="card"><table><thead><tr><th>Time</th><th>Event</th><th>Status</th><th class="opt">Duration</th><th>Response</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
    ${
      attempts.length
        ? attempts.map(
            (a) => html`<tr><td>${a.at.replace('T', ' ').slice(0, 19)}</td><td>${a.event_type}<br><small class="muted wrap">${a.event_id}</small></td>
      <td><span class="${`badge ${a.status !== null && a.status >= 200 && a.status < 300 ? 'ok' : 'failed'}`}">${a.status ?? a.error ?? '—'}</span></td><td class="opt">${a.duration_ms} ms</td>
      <td class="wrap"><pre>${a.response ?? ''}</pre></td>
      <td>${a.delivery_state !== null ? html`<form method="post" action="${path`/webhooks/${e.id}/replay/${a.event_id}`}" class="inline">${csrf(c)}<button class="secondary">Replay</button></form>` : ''}</td></tr>`,
          )
        : html`<tr><td colspan="6" class="muted">No deliveries yet.</td></tr>`
    }
    </tbody></table></div>`;
}

export function messagesBody(q: Record<string, string | undefined>, rows: ReturnType<typeof searchMessages>, next: URLSearchParams | null): Html {
  const opt = (v: string) => html`<option ${q.state === v ? new Html('selected') : ''}>${v}</option>`;
  return html`<div class="card"><form method="get" action="/messages" class="row" role="search">
      <label>Recipient <input name="recipient" type="email" value="${q.recipient ?? ''}"></label>
      <label>Message-ID <input name="message_id" value="${q.message_id ?? ''}"></label>
      <label>State <select name="state"><option value="">any</option>${SEARCH_STATES.map(opt)}</select></label>
      <label>Tag <input name="tag" value="${q.tag ?? ''}"></label>
      <label>Since <input name="since" type="date" value="${q.since ?? ''}"></label>
      <label>Until <input name="until" type="date" value="${q.until ?? ''}"></label>
      <button>Search</button></form></div>
    <div class="card"><table><thead><tr><th>Accepted</th><th>Subject</th><th class="opt">From</th><th>Recipients</th></tr></thead><tbody>
    ${
      rows.length
        ? rows.map(
            (
              m,
            ) => html`<tr><td>${m.created_at.replace('T', ' ').slice(0, 19)}</td><td><a href="${path`/messages/${m.message_id}`}">${m.subject || '(no subject)'}</a>${m.sandbox ? html` <span class="badge">sandbox</span>` : ''}</td><td class="opt wrap">${m.from}</td>
      <td>${Object.entries(m.states).map(([s, n]) => html`<span class="${`badge ${s}`}">${n} ${s}</span> `)}</td></tr>`,
          )
        : html`<tr><td colspan="4" class="muted">No messages match.</td></tr>`
    }
    </tbody></table>${next ? html`<p><a href="${`/messages?${next}`}">Older</a></p>` : ''}</div>`;
}

export function messageBody(c: PageContext, m: NonNullable<ReturnType<typeof getMessage>>, hooks: ReturnType<typeof deliveriesOfMessage>): Html {
  // Nothing sent yet (a scheduled message, or one still waiting its turn): it can be canceled.
  const cancelable = m.recipients.every((r) => r.state === 'queued' && r.attempts === 0);
  return html`${cancelable ? html`<form method="post" action="${path`/messages/${m.message_id}/cancel`}" class="card">${csrf(c)}<button class="secondary">Cancel this message</button> <span class="muted">Nothing of it has been sent${m.scheduled_at ? ` (scheduled for ${m.scheduled_at})` : ''}.</span></form>` : ''}
    <div class="card"><dl><dt>Subject</dt><dd>${m.subject}</dd><dt>From</dt><dd class="wrap">${m.from}</dd><dt>Message-ID</dt><dd class="wrap"><code>${m.message_id}</code></dd>
      <dt>Accepted</dt><dd>${m.created_at}</dd>${m.scheduled_at ? html`<dt>Scheduled for</dt><dd>${m.scheduled_at}</dd>` : ''}${m.sandbox ? html`<dt>Sandbox</dt><dd>yes: simulated, nothing sent</dd>` : ''}
      ${m.tags.length ? html`<dt>Tags</dt><dd>${m.tags.map((t) => html`<a class="badge" href="${`/messages?${new URLSearchParams({ tag: t })}`}">${t}</a> `)}</dd>` : ''}
      ${Object.keys(m.metadata).length ? html`<dt>Metadata</dt><dd><pre>${JSON.stringify(m.metadata, null, 2)}</pre></dd>` : ''}</dl></div>
    ${m.recipients.map((r) => {
      const events = m.events.filter((e) => e.data.recipient === r.address);
      return html`<h2>${r.address} <span class="${`badge ${r.state}`}">${r.state}</span></h2>
        <div class="card"><p class="muted">${r.field} · ${r.attempts} attempt(s)${r.next_attempt_at ? ` · next attempt ${r.next_attempt_at}` : ''}</p>
        ${r.last_response ? html`<p>Last reply: <code class="wrap">${JSON.stringify(r.last_response)}</code></p>` : ''}
        <ol>${events.map((e) => {
          const d = e.data as Record<string, unknown> & {
            response?: { code?: number; enhanced_code?: string; message?: string };
            attempt?: number;
            mx?: string;
            tls?: boolean;
            tls_verified?: boolean;
          };
          const tls = d.tls === undefined ? '' : d.tls ? (d.tls_verified ? ' · TLS, certificate verified' : ' · TLS, certificate not checked') : ' · without TLS';
          const hooksOf = hooks.filter((h) => h.event_id === e.id);
          return html`<li><b>${e.type}</b> at ${e.timestamp}${d.attempt ? ` · attempt ${d.attempt}` : ''}${d.mx ? ` · ${d.mx}` : ''}${tls}
            ${d.response ? html`<br><code class="wrap">${[d.response.code, d.response.enhanced_code, d.response.message].filter((x) => x !== undefined && x !== '').join(' ')}</code>` : ''}
            ${hooksOf.map((h) => html`<br><small>webhook → <a href="${path`/webhooks/${h.endpoint_id}`}">${h.endpoint_id}</a>: <span class="${`badge ${h.state}`}">${h.state}</span> after ${h.attempts} attempt(s)</small>`)}</li>`;
        })}</ol></div>`;
    })}`;
}

export function overviewBody(o: Overview, now: number): Html {
  const stat = (label: string, v: number | string) => html`<div class="stat"><b>${v}</b><span>${label}</span></div>`;
  return html`<h2>Last 24 hours</h2>
        <div class="stats">${(['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const).map((k) => stat(k, o.last24h[k]))}</div>
        <h2>Last 7 days</h2>
        <div class="stats">${(['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const).map((k) => stat(k, o.last7d[k]))}</div>
        <div class="card">${chart(o.hourly)}</div>
        <h2>Now</h2>
        <div class="stats">${stat('queued', o.queue.queued)}${stat('deferred', o.queue.deferred)}${stat('oldest deferred', iso(o.oldestDeferredAt))}${stat('webhook deliveries waiting', o.webhookBacklog)}</div>
        ${o.throttled.length ? throttledBody(o.throttled, now) : ''}`;
}

/** Receivers that asked us to slow down: mail to them goes at a reduced pace until they accept again. */
function throttledBody(rows: Overview['throttled'], now: number): Html {
  return html`<h2>Destinations slowed down</h2>
        <div class="card"><p class="muted">These receivers answered "try later" or "too fast" (a 421 or a rate limit). Mail to them goes with fewer connections, after a pause that grows while they keep refusing; full speed comes back by itself as they accept again.</p>
        <table><thead><tr><th>Destination</th><th>Paused until</th><th>Connections</th><th class="opt">Since</th><th>Last refusal</th></tr></thead><tbody>
        ${rows.map((d) => html`<tr><td>${d.destination}</td><td>${d.pausedUntil > now ? iso(d.pausedUntil) : 'not paused'}</td><td>${d.connections}</td><td class="opt">${iso(d.since)}</td><td><code class="wrap">${[d.reason.code, d.reason.enhanced_code, d.reason.message].filter((x) => x !== '').join(' ')}</code></td></tr>`)}
        </tbody></table></div>`;
}

export function domainsBody(c: PageContext, rows: DomainRow[]): Html {
  return html`<div class="card"><form method="post" action="/domains" class="row">${csrf(c)}
          <label>Domain <input name="name" required placeholder="example.com" autocomplete="off"></label>
          <label><span><input type="checkbox" name="receiving" value="1"> also receive mail</span></label>
          <button>Add domain</button></form></div>
        <div class="card"><table><thead><tr><th>Domain</th><th>Verified</th><th>Receiving</th><th class="opt">Added</th></tr></thead><tbody>
        ${rows.length ? rows.map((d) => html`<tr><td><a href="${path`/domains/${d.name}`}">${d.name}</a></td><td>${d.verified_at ? html`<span class="badge ok">verified</span>` : html`<span class="badge pending">not verified</span>`}</td><td>${d.receiving ? 'on' : 'off'}</td><td class="opt">${iso(d.created_at)}</td></tr>`) : html`<tr><td colspan="4" class="muted">No domains yet.</td></tr>`}
        </tbody></table></div>`;
}

export function suppressionsBody(c: PageContext, q: string, rows: SuppressionRow[]): Html {
  return html`<div class="card"><form method="get" action="/suppressions" class="row" role="search"><label>Address or its beginning <input name="q" value="${q}" type="search"></label><button>Search</button></form></div>
        <div class="card"><form method="post" action="/suppressions" class="row">${csrf(c)}<label>Suppress an address <input name="address" type="email" required></label><button>Add</button></form></div>
        <div class="card"><table><thead><tr><th>Address</th><th>Reason</th><th class="opt">Message</th><th class="opt">Since</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
        ${
          rows.length
            ? rows.map(
                (
                  s,
                ) => html`<tr><td class="wrap">${s.address}</td><td><span class="badge">${s.reason}</span></td><td class="opt wrap">${s.message_id ? html`<a href="${path`/messages/${s.message_id}`}">${s.message_id}</a>` : '—'}</td><td class="opt">${iso(s.created_at)}</td>
          <td><form method="post" action="/suppressions/remove" class="inline">${csrf(c)}<input type="hidden" name="address" value="${s.address}"><button class="secondary" aria-label="${`Remove ${s.address}`}">Remove</button></form></td></tr>`,
              )
            : html`<tr><td colspan="5" class="muted">No suppressed addresses${q ? ' match' : ''}.</td></tr>`
        }
        </tbody></table></div>`;
}

export function inboundListBody(shown: Array<ReturnType<typeof inboundSummary>>, older: number | undefined): Html {
  return html`<div class="card"><table><thead><tr><th>Received</th><th>From</th><th>Subject</th><th class="opt">To</th><th class="opt">Size</th></tr></thead><tbody>
        ${shown.length ? shown.map((m) => html`<tr><td>${m.received_at.replace('T', ' ').slice(0, 19)}</td><td class="wrap">${m.from}</td><td><a href="${path`/inbound/${m.id}`}">${m.subject || '(no subject)'}</a></td><td class="opt wrap">${m.to.join(', ')}</td><td class="opt">${m.size}</td></tr>`) : html`<tr><td colspan="5" class="muted">Nothing received yet.</td></tr>`}
        </tbody></table>${older !== undefined ? html`<p><a href="${`/inbound?before=${older}`}">Older</a></p>` : ''}</div>`;
}

export function inboundBody(id: string, v: InboundPage): Html {
  return html`<div class="card"><dl>
          <dt>From</dt><dd class="wrap">${String(v.from ?? '')}</dd><dt>To</dt><dd class="wrap">${((v.to as string[] | undefined) ?? []).join(', ')}</dd>
          <dt>Subject</dt><dd>${String(v.subject ?? '')}</dd><dt>Received</dt><dd>${String(v.received_at)}</dd>
          <dt>Authentication</dt><dd>${Object.entries((v.authentication as Record<string, string>) ?? {}).map(([k, r]) => html`<span class="badge">${k}=${r}</span> `)}</dd></dl>
          <p><a href="${path`/inbound/${id}/raw`}" download="${`${id}.eml`}">Download the raw message</a></p></div>
        ${v.html ? html`<h2>HTML</h2><iframe class="mail" title="The message's HTML, without scripts or remote content" sandbox="" referrerpolicy="no-referrer" src="${path`/inbound/${id}/html`}"></iframe>` : ''}
        <h2>Text</h2><div class="card"><pre>${String(v.text ?? '(no text part)')}</pre></div>
        ${v.attachments?.length ? html`<h2>Attachments</h2><div class="card"><ul>${v.attachments.map((a) => html`<li>${a.filename ?? '(unnamed)'} · ${a.content_type} · ${a.size} bytes</li>`)}</ul></div>` : ''}
        <h2>Headers</h2><div class="card"><pre>${(v.headers ?? []).map((h) => `${h.name}: ${h.value}\n`).join('')}</pre></div>`;
}

export function customersBody(c: PageContext, customers: Customer[]): Html {
  return html`<div class="card"><form method="post" action="/customers" class="row">${csrf(c)}<label>New customer <input name="name" required pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,62}" title="letters, digits, dot, dash, underscore; at most 63"></label><button>Create</button></form></div>
        <div class="card"><table><thead><tr><th>Name</th><th>Created</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
        ${customers.map((x) => html`<tr><td>${x.name}</td><td>${iso(x.created_at)}</td><td><form method="post" action="/customer" class="inline">${csrf(c)}<input type="hidden" name="customer" value="${x.name}"><button class="secondary" aria-label="${`Show ${x.name}`}">Show</button></form></td></tr>`)}
        </tbody></table></div>`;
}

export function revokeKeyBody(c: PageContext, k: ApiKeyInfo): Html {
  return html`<div class="card"><p>Revoke <code>${k.id}</code> (${k.name || 'unnamed'}, ${k.kind})? Requests with it are refused from the next one on. This cannot be undone.</p>
        <form method="post" action="${path`/keys/${k.id}/revoke`}">${csrf(c)}<button class="danger">Revoke key</button> <a href="/keys">Cancel</a></form></div>`;
}
