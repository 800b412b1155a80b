import type { SimulatedSuppression, SuppressionRow } from '../../store/model.js';
import { type Html, html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import { csrf, when } from './common.js';

/** The suppression list (search, add, remove), and apart from it what sandbox keys simulated. */
export function suppressionsBody(
  c: PageContext,
  q: string,
  rows: SuppressionRow[],
  simulated: SimulatedSuppression[],
): Html {
  return html`<div class="card"><form method="get" action="/suppressions" class="row" role="search"><label>Address or its beginning <input name="q" value="${q}" type="search"></label><button>Search</button></form></div>
        <div class="card"><form method="post" action="/suppressions" class="row">${csrf(c)}<label>Suppress an address <input name="address" type="email" required></label><button>Add</button></form></div>
        <div class="card"><table><thead><tr><th>Address</th><th>Reason</th><th class="opt">Message</th><th class="opt">Since</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
        ${
          rows.length
            ? rows.map(
                (
                  s,
                ) => html`<tr><td class="wrap">${s.address}</td><td><span class="badge">${s.reason}</span></td><td class="opt wrap">${s.message_id ? html`<a href="${path`/messages/${s.message_id}`}">${s.message_id}</a>` : '—'}</td><td class="opt">${when(s.created_at, c.now)}</td>
          <td><form method="post" action="/suppressions/remove" class="inline">${csrf(c)}<input type="hidden" name="address" value="${s.address}"><button class="secondary" aria-label="${`Remove ${s.address}`}">Remove</button></form></td></tr>`,
              )
            : html`<tr><td colspan="5" class="muted">No suppressed addresses${q ? ' match' : ''}.${simulated.length ? ' What sandbox keys simulated is below, not on this list.' : ''}</td></tr>`
        }
        </tbody></table></div>
        ${simulatedBody(c, simulated)}`;
}

/** What sandbox keys' simulated bounces and complaints suppressed: never the real list. */
function simulatedBody(c: PageContext, rows: SimulatedSuppression[]): Html {
  return html`<h2>Simulated by sandbox keys</h2>
        <div class="card"><p class="muted">A sandbox key's simulated bounce or complaint (to <code>bounced@</code>, <code>async-bounced@</code> or <code>complained@simulator.posthaste.test</code>) fires <code>recipient.suppressed</code> as a real one would, but never adds the address to the list above: mail sent to test must not stop real mail (docs/delivery.md, "Sandbox and the simulator").</p>
        ${
          rows.length
            ? html`<table><thead><tr><th>Address</th><th>Reason</th><th class="opt">Message</th><th>When</th></tr></thead><tbody>
          ${rows.map((s) => html`<tr><td class="wrap">${s.address}</td><td><span class="badge">${s.reason}</span></td><td class="opt wrap"><a href="${path`/messages/${s.message_id}`}">${s.message_id}</a></td><td>${when(s.created_at, c.now)}</td></tr>`)}
          </tbody></table>`
            : html`<p>None simulated yet.</p>`
        }</div>`;
}
