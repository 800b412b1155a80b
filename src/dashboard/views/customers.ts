import { type QuotaStatus, useText } from '../../domain/quotas.js';
import type { Customer, CustomerPools } from '../../store/model.js';
import { type Html, html } from '../html.js';
import type { PageContext } from '../layout.js';
import { csrf, when } from './common.js';

const QUOTA_LABEL = { per_minute: 'a minute', per_day: 'today', per_month: 'this month' } as const;

/** Each send quota's use in its current window against its limit, production keys and then sandbox keys. */
function quotaCell(quotas: QuotaStatus[]): Html {
  return html`<ul class="quotas">${quotas.map(
    (q) =>
      html`<li>${QUOTA_LABEL[q.quota]}: ${useText(q.used, q.limit)}${q.limit > 0 && !q.own ? ' (default)' : ''}; <span class="muted">sandbox ${useText(q.sandboxUsed, q.sandboxLimit)}</span></li>`,
  )}</ul>`;
}

/** The customers, each with its pools of source addresses (docs/delivery.md, "Sending identities") and its send quotas. */
export function customersBody(
  c: PageContext,
  customers: Array<Customer & { quotas: QuotaStatus[] }>,
  pools: Map<number, CustomerPools>,
): Html {
  return html`<div class="card"><form method="post" action="/customers" class="row">${csrf(c)}<label>New customer <input name="name" required pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,62}" title="letters, digits, dot, dash, underscore; at most 63"></label><button>Create</button></form></div>
        <div class="card"><table><thead><tr><th>Name</th><th>Created</th><th>Pool</th><th>Allowed pools</th><th>Send quotas (recipients)</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
        ${customers.map((x) => html`<tr><td>${x.name}</td><td>${when(x.created_at, c.now)}</td><td>${pools.get(x.id)?.default_pool ?? html`<span class="muted">default</span>`}</td><td>${pools.get(x.id)?.allowed_pools.join(', ') ?? ''}</td><td>${quotaCell(x.quotas)}</td><td><form method="post" action="/customer" class="inline">${csrf(c)}<input type="hidden" name="customer" value="${x.name}"><button class="secondary" aria-label="${`Show ${x.name}`}">Show</button></form></td></tr>`)}
        </tbody></table></div>`;
}
