import { SEARCH_STATES } from '../../domain/message-search.js';
import type { MessageSummary } from '../../store/model.js';
import { Html, html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import { when } from './common.js';

/** The messages page: the search form and a page of what it found. */
export function messagesBody(
  c: PageContext,
  q: Record<string, string | undefined>,
  rows: MessageSummary[],
  next: URLSearchParams | null,
): Html {
  const opt = (v: string) => html`<option ${q.state === v ? new Html('selected') : ''}>${v}</option>`;
  return html`<div class="card"><form method="get" action="/messages" class="row" role="search">
      <label>Recipient <input name="recipient" type="email" value="${q.recipient ?? ''}"></label>
      <label>Message-ID <input name="message_id" value="${q.message_id ?? ''}" title="posthaste's, or the one the sender wrote"></label>
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
