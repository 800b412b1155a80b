import type { inboundSummary } from '../../inbound/view.js';
import { byteSize } from '../format.js';
import { type Html, html, path } from '../html.js';
import { when } from './common.js';

/** A received message as its page needs it (the API's view of it). */
export type InboundPage = Record<string, unknown> & {
  headers?: Array<{ name: string; value: string }>;
  html?: string | null;
  text?: string | null;
  attachments?: Array<{ filename: string | null; content_type: string; size: number }>;
};

export function inboundListBody(
  now: number,
  shown: Array<ReturnType<typeof inboundSummary>>,
  older: number | undefined,
): Html {
  return html`<div class="card"><table><thead><tr><th>Received</th><th>From</th><th>Subject</th><th class="opt">To</th><th class="opt">Size</th></tr></thead><tbody>
        ${shown.length ? shown.map((m) => html`<tr><td>${when(m.received_at, now)}</td><td class="wrap">${m.from}</td><td><a href="${path`/inbound/${m.id}`}">${m.subject || '(no subject)'}</a></td><td class="opt wrap">${m.to.join(', ')}</td><td class="opt">${byteSize(m.size)}</td></tr>`) : html`<tr><td colspan="5" class="muted">Nothing received yet.</td></tr>`}
        </tbody></table>${older !== undefined ? html`<p><a href="${`/inbound?before=${older}`}">Older</a></p>` : ''}</div>`;
}

export function inboundBody(now: number, id: string, v: InboundPage): Html {
  return html`<div class="card"><dl>
          <dt>From</dt><dd class="wrap">${String(v.from ?? '')}</dd><dt>To</dt><dd class="wrap">${((v.to as string[] | undefined) ?? []).join(', ')}</dd>
          <dt>Subject</dt><dd>${String(v.subject ?? '')}</dd><dt>Received</dt><dd>${typeof v.received_at === 'string' ? when(v.received_at, now) : '—'}</dd>
          <dt>Authentication</dt><dd>${Object.entries((v.authentication as Record<string, string>) ?? {}).map(([k, r]) => html`<span class="badge">${k}=${r}</span> `)}</dd></dl>
          <p><a href="${path`/inbound/${id}/raw`}" download="${`${id}.eml`}">Download the raw message</a></p></div>
        ${v.html ? html`<h2>HTML</h2><iframe class="mail" title="The message's HTML, without scripts or remote content" sandbox="" referrerpolicy="no-referrer" src="${path`/inbound/${id}/html`}"></iframe>` : ''}
        <h2>Text</h2><div class="card"><pre>${String(v.text ?? '(no text part)')}</pre></div>
        ${v.attachments?.length ? html`<h2>Attachments</h2><div class="card"><ul>${v.attachments.map((a) => html`<li>${a.filename ?? '(unnamed)'} · ${a.content_type} · ${byteSize(a.size)}</li>`)}</ul></div>` : ''}
        <h2>Headers</h2><div class="card"><pre>${(v.headers ?? []).map((h) => `${h.name}: ${h.value}\n`).join('')}</pre></div>`;
}
