import type { MessageHookDelivery, MessageView, QueueEntry, QueueOp } from '../../store/model.js';
import type { MessageContent } from '../content.js';
import { plural } from '../format.js';
import { type Html, html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import { csrf, endpointLink, replyBlock, when } from './common.js';
import { contentBody, sourceBody } from './message-content.js';

/** A message's page: what it is, its content, each recipient's timeline with the webhook deliveries of its events (`endpoints`: the customer's, id to URL), its source. */
export function messageBody(
  c: PageContext,
  m: MessageView,
  hooks: MessageHookDelivery[],
  endpoints: Map<string, string>,
  content: MessageContent,
  retentionDays: number,
  waiting: QueueEntry[] = [],
): Html {
  // Nothing sent yet (a scheduled message, or one still waiting its turn): it can be canceled.
  const cancelable = m.recipients.every((r) => r.state === 'queued' && r.attempts === 0);
  const heldAddresses = new Set(waiting.filter((w) => w.state === 'held').map((w) => w.address));
  return html`${cancelable ? html`<form method="post" action="${path`/messages/${m.message_id}/cancel`}" class="card">${csrf(c)}<button class="secondary">Cancel this message</button> <span class="muted">Nothing of it has been sent${m.scheduled_at ? html` (scheduled ${when(m.scheduled_at, c.now)})` : ''}.</span></form>` : ''}
    ${queueCard(c, m, waiting, !cancelable)}
    <div class="card"><dl><dt>Subject</dt><dd>${m.subject}</dd><dt>From</dt><dd class="wrap">${m.from}</dd><dt>Message-ID</dt><dd class="wrap"><code>${m.message_id}</code></dd>${m.header_message_id !== m.message_id ? html`<dt>Sender's Message-ID</dt><dd class="wrap"><code>${m.header_message_id}</code> <span class="muted">in the message's Message-ID field, as the sender wrote it</span></dd>` : ''}
      <dt>Accepted</dt><dd>${when(m.created_at, c.now)}</dd>${m.scheduled_at ? html`<dt>Scheduled for</dt><dd>${when(m.scheduled_at, c.now)}</dd>` : ''}${m.sandbox ? html`<dt>Sandbox</dt><dd>yes: simulated, nothing sent</dd>` : ''}
      ${m.tags.length ? html`<dt>Tags</dt><dd>${m.tags.map((t) => html`<a class="badge" href="${`/messages?${new URLSearchParams({ tag: t })}`}">${t}</a> `)}</dd>` : ''}
      ${Object.keys(m.metadata).length ? html`<dt>Metadata</dt><dd><pre>${JSON.stringify(m.metadata, null, 2)}</pre></dd>` : ''}</dl></div>
    ${contentBody(m, content, retentionDays)}
    ${m.recipients.map((r) => {
      const events = m.events.filter((e) => e.data.recipient === r.address);
      return html`<h2>${r.address} <span class="${`badge ${r.state}`}">${r.state}</span>${heldAddresses.has(r.address) && (r.state === 'queued' || r.state === 'deferred') ? html` <span class="badge held">held</span>` : ''}</h2>
        <div class="card"><p class="muted">${r.field} · ${plural(r.attempts, 'attempt')}${r.next_attempt_at ? html` · next attempt ${when(r.next_attempt_at, c.now)}` : ''}</p>
        ${r.last_response ? html`<p class="wrap">Last reply: ${replyBlock(r.last_response)}</p>` : ''}
        <ol>${events.map((e) => {
          const d = e.data as Record<string, unknown> & {
            response?: unknown;
            attempt?: number;
            mx?: string;
            tls?: boolean;
            tls_verified?: boolean;
            sandbox?: boolean;
          };
          const tls =
            d.tls === undefined
              ? ''
              : d.tls
                ? d.tls_verified
                  ? ' · TLS, certificate verified'
                  : ' · TLS, certificate not checked'
                : ' · without TLS';
          const hooksOf = hooks.filter((h) => h.event_id === e.id);
          return html`<li><b>${e.type}</b> ${when(e.timestamp, c.now)}${d.attempt ? ` · attempt ${d.attempt}` : ''}${d.mx ? ` · ${d.mx}` : ''}${sourceOf(d)}${tls}
            ${d.response ? html`<br>${replyBlock(d.response)}` : ''}
            ${e.type === 'recipient.suppressed' && d.sandbox === true ? html`<br><small class="muted">Simulated by a sandbox key: the address was not added to the suppression list (see Suppressions, "Simulated by sandbox keys").</small>` : ''}
            ${hooksOf.map((h) => html`<br><small>webhook → ${endpointLink(h.endpoint_id, endpoints.get(h.endpoint_id))}: <span class="${`badge ${h.state}`}">${h.state}</span> after ${plural(h.attempts, 'attempt')}${hookDetail(h, c.now)}</small>`)}</li>`;
        })}</ol></div>`;
    })}
    ${sourceBody(m, content)}`;
}

/** The queue's operations on the message's waiting recipients, each button shown when it would change one (docs/operations.md, "The queue"). */
function queueCard(c: PageContext, m: MessageView, waiting: QueueEntry[], deletable: boolean): Html {
  if (waiting.length === 0) return html``;
  const held = waiting.filter((w) => w.state === 'held').length;
  const deferred = waiting.filter((w) => w.state === 'deferred' && !w.in_flight).length;
  const button = (op: QueueOp, label: string, cls = 'secondary') =>
    html`<form method="post" action="${path`/messages/${m.message_id}/queue/${op}`}" class="inline">${csrf(c)}<button class="${cls}">${label}</button></form> `;
  return html`<div class="card"><p class="muted">${plural(waiting.length, 'recipient')} waiting to be sent${held ? `, ${held} held` : ''}${waiting.some((w) => w.in_flight) ? '; one being delivered now finishes that attempt first' : ''}.</p>
    ${deferred ? button('retry', 'Retry now') : ''}${waiting.length > held ? button('hold', 'Hold') : ''}${held ? button('release', 'Release') : ''}${deletable ? button('delete', 'Delete what has not been sent', 'danger') : ''}</div>`;
}

/** Where an attempt went from (outbound.pools): its source address and pool, as plain text (escaped where it is put). */
function sourceOf(d: Record<string, unknown>): string {
  if (typeof d.source_ip !== 'string') return '';
  return ` · from ${d.source_ip}${typeof d.pool === 'string' ? ` (pool ${d.pool})` : ''}`;
}

/** A webhook delivery's last answer and, while pending, when the next attempt is due. */
function hookDetail(h: MessageHookDelivery, now: number): Html | string {
  if (h.attempts === 0) return '';
  const last = h.last_status !== null ? `HTTP ${h.last_status}` : (h.last_error ?? 'no answer');
  return html` · last: ${last}${h.next_attempt_at !== null ? html` · next attempt ${when(h.next_attempt_at, now)}` : ''}`;
}
