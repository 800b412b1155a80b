import { html, path, Html } from '../html.js';
import type { PageContext } from '../layout.js';
import type { getMessage, searchMessages } from '../../store/messages.js';
import type { deliveriesOfMessage } from '../../store/webhooks.js';
import { SEARCH_STATES } from '../../domain/message-search.js';
import { csrf, when } from './common.js';
import { plural } from '../format.js';

export function messagesBody(c: PageContext, q: Record<string, string | undefined>, rows: ReturnType<typeof searchMessages>, next: URLSearchParams | null): Html {
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
            ) => html`<tr><td>${when(m.created_at, c.now)}</td><td><a href="${path`/messages/${m.message_id}`}">${m.subject || '(no subject)'}</a>${m.sandbox ? html` <span class="badge">sandbox</span>` : ''}</td><td class="opt wrap">${m.from}</td>
      <td>${Object.entries(m.states).map(([s, n]) => html`<span class="${`badge ${s}`}">${n} ${s}</span> `)}</td></tr>`,
          )
        : html`<tr><td colspan="4" class="muted">No messages match.</td></tr>`
    }
    </tbody></table>${next ? html`<p><a href="${`/messages?${next}`}">Older</a></p>` : ''}</div>`;
}

export function messageBody(c: PageContext, m: NonNullable<ReturnType<typeof getMessage>>, hooks: ReturnType<typeof deliveriesOfMessage>): Html {
  // Nothing sent yet (a scheduled message, or one still waiting its turn): it can be canceled.
  const cancelable = m.recipients.every((r) => r.state === 'queued' && r.attempts === 0);
  return html`${cancelable ? html`<form method="post" action="${path`/messages/${m.message_id}/cancel`}" class="card">${csrf(c)}<button class="secondary">Cancel this message</button> <span class="muted">Nothing of it has been sent${m.scheduled_at ? html` (scheduled ${when(m.scheduled_at, c.now)})` : ''}.</span></form>` : ''}
    <div class="card"><dl><dt>Subject</dt><dd>${m.subject}</dd><dt>From</dt><dd class="wrap">${m.from}</dd><dt>Message-ID</dt><dd class="wrap"><code>${m.message_id}</code></dd>
      <dt>Accepted</dt><dd>${when(m.created_at, c.now)}</dd>${m.scheduled_at ? html`<dt>Scheduled for</dt><dd>${when(m.scheduled_at, c.now)}</dd>` : ''}${m.sandbox ? html`<dt>Sandbox</dt><dd>yes: simulated, nothing sent</dd>` : ''}
      ${m.tags.length ? html`<dt>Tags</dt><dd>${m.tags.map((t) => html`<a class="badge" href="${`/messages?${new URLSearchParams({ tag: t })}`}">${t}</a> `)}</dd>` : ''}
      ${Object.keys(m.metadata).length ? html`<dt>Metadata</dt><dd><pre>${JSON.stringify(m.metadata, null, 2)}</pre></dd>` : ''}</dl></div>
    ${m.recipients.map((r) => {
      const events = m.events.filter((e) => e.data.recipient === r.address);
      return html`<h2>${r.address} <span class="${`badge ${r.state}`}">${r.state}</span></h2>
        <div class="card"><p class="muted">${r.field} · ${plural(r.attempts, 'attempt')}${r.next_attempt_at ? html` · next attempt ${when(r.next_attempt_at, c.now)}` : ''}</p>
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
          return html`<li><b>${e.type}</b> ${when(e.timestamp, c.now)}${d.attempt ? ` · attempt ${d.attempt}` : ''}${d.mx ? ` · ${d.mx}` : ''}${tls}
            ${d.response ? html`<br><code class="wrap">${[d.response.code, d.response.enhanced_code, d.response.message].filter((x) => x !== undefined && x !== '').join(' ')}</code>` : ''}
            ${hooksOf.map((h) => html`<br><small>webhook → <a href="${path`/webhooks/${h.endpoint_id}`}">${h.endpoint_id}</a>: <span class="${`badge ${h.state}`}">${h.state}</span> after ${plural(h.attempts, 'attempt')}</small>`)}</li>`;
        })}</ol></div>`;
    })}`;
}
