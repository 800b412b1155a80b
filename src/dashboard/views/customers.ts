import { type QuotaStatus, useText } from '../../domain/quotas.js';
import type { ReputationSettings } from '../../domain/reputation.js';
import type { CustomerReputation } from '../../send/reputation.js';
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

/**
 * The customer's sending reputation on its overview (docs/operations.md, "Reputation"): its state,
 * its rates and the thresholds; for an administrator, the Pause or Resume form.
 */
export function reputationBody(c: PageContext, r: CustomerReputation, s: ReputationSettings, admin: boolean): Html {
  const { standing: st, rates } = r;
  const pct = (v: number | null) => (v === null ? `not judged yet (under ${s.minRecipients} recipients)` : `${v} %`);
  const state =
    st.state === 'paused'
      ? html`<p class="error"><b>Sending is paused</b> ${when(st.paused_at, c.now)} by ${st.paused_by === 'reputation' ? 'its rates' : 'an administrator'}: ${st.reason ?? ''}. New sends are refused and queued mail is held; an administrator resumes it.</p>`
      : st.state === 'warning'
        ? html`<p class="error"><b>Warning:</b> a rate has reached its warning threshold; at the pause threshold sending is paused.</p>`
        : html`<p class="muted">Sending normally.</p>`;
  const form = !admin
    ? ''
    : st.state === 'paused'
      ? html`<form method="post" action="/customers/resume" class="row">${csrf(c)}<input type="hidden" name="customer" value="${c.customer.name}"><button>Resume</button></form>`
      : html`<form method="post" action="/customers/pause" class="row">${csrf(c)}<input type="hidden" name="customer" value="${c.customer.name}"><label>Reason <input name="reason" required maxlength="500"></label><button class="secondary">Pause</button></form>`;
  return html`<h2>Sending reputation</h2>
        <div class="card">${state}
        <table><thead><tr><th>Over ${s.windowMs / 86_400_000} days</th><th>Now</th><th>Warning at</th><th>Paused at</th></tr></thead><tbody>
        <tr><td>Bounce rate (hard bounces over ${rates.recipients} recipients with an outcome)</td><td>${pct(rates.bounce_rate)}</td><td>${s.warning.bounce} %</td><td>${s.pause.bounce} %</td></tr>
        <tr><td>Complaint rate (${rates.complaints} complaints over ${rates.delivered} delivered)</td><td>${pct(rates.complaint_rate)}</td><td>${s.warning.complaint} %</td><td>${s.pause.complaint} %</td></tr>
        </tbody></table>
        <p class="muted">${rates.expired} expired (not counted: a destination that was down is not the list's fault).</p>
        ${form}</div>`;
}
