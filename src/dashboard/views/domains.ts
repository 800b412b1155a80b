import type { domainRecords, returnPathStatus, verifyDomain } from '../../domain-setup/records.js';
import type { RecordCheck } from '../../lib/verify-domain.js';
import type { DomainRow } from '../../store/model.js';
import { Html, html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import { csrf, when } from './common.js';

export function domainsBody(c: PageContext, rows: DomainRow[]): Html {
  return html`<div class="card"><form method="post" action="/domains" class="row">${csrf(c)}
          <label>Domain <input name="name" required placeholder="example.com" autocomplete="off"></label>
          <label><span><input type="checkbox" name="receiving" value="1"> also receive mail</span></label>
          <button>Add domain</button></form></div>
        <div class="card"><table><thead><tr><th>Domain</th><th>Verified</th><th>Receiving</th><th class="opt">Added</th></tr></thead><tbody>
        ${rows.length ? rows.map((d) => html`<tr><td><a href="${path`/domains/${d.name}`}">${d.name}</a></td><td>${d.verified_at ? html`<span class="badge ok">verified</span>` : html`<span class="badge pending">not verified</span>`}</td><td>${d.receiving ? 'on' : 'off'}</td><td class="opt">${when(d.created_at, c.now)}</td></tr>`) : html`<tr><td colspan="4" class="muted">No domains yet.</td></tr>`}
        </tbody></table></div>`;
}

/**
 * What a record's lookup found: found; missing (the DNS answered without it: what it did hold is
 * shown); or no answer (the DNS server did not answer at all, which says nothing of the record:
 * the words name dns.servers).
 */
function foundBadge(k: RecordCheck | undefined): Html {
  if (k?.found) return html`<span class="badge ok">found</span>`;
  const seen = k?.seen.length
    ? html`<br><small class="wrap">${k.lookup === 'no_answer' ? '' : 'seen: '}${k.seen.join(' | ')}</small>`
    : '';
  return k?.lookup === 'no_answer'
    ? html`<span class="badge pending">no answer</span>${seen}`
    : html`<span class="badge missing">missing</span>${seen}`;
}

/** Whether the domain's return path holds, and the envelope sender its mail goes out with. */
function returnPathCard(r: ReturnType<typeof returnPathStatus>): Html {
  return html`<div class="card"><p>Return path: ${r.holds ? html`<span class="badge ok">holds</span> <code>${r.host}</code>; the envelope sender is <code>bounces+…@${r.envelope_domain}</code>, so SPF aligns with the From domain` : html`<span class="badge pending">not found</span> ${r.lost}`}</p></div>`;
}

export function domainBody(
  c: PageContext,
  d: DomainRow,
  records: ReturnType<typeof domainRecords>,
  limits: { ratePerMinute: number | null; monthlyLimit: number | null },
  result: Awaited<ReturnType<typeof verifyDomain>> | undefined,
  returnPath: ReturnType<typeof returnPathStatus>,
): Html {
  const check = (name: string, purpose: string) => result?.checks.find((k) => k.name === name && k.purpose === purpose);
  const verdict = !result
    ? ''
    : result.verified
      ? 'Verified: every required record is published.'
      : result.dnsError
        ? `Not checked: ${result.dnsError}.`
        : 'Not verified yet: see the records marked missing.';
  return html`${result ? html`<div class="${result.verified ? 'flash' : 'flash error'}" role="status">${verdict}</div>` : ''}
    <div class="card"><p>${d.verified_at ? html`<span class="badge ok">verified</span> since ${when(d.verified_at, c.now)}` : html`<span class="badge pending">not verified</span> sending from it is refused until it is`}</p>
      <form method="post" action="${path`/domains/${d.name}/verify`}" class="inline">${csrf(c)}<button>Verify now</button></form></div>
    ${returnPathCard(result?.returnPath ?? returnPath)}
    <h2>DNS records to publish</h2>
    <div class="card"><table class="dns"><thead><tr><th>Purpose</th><th>Type</th><th>Name</th><th>Value</th>${result ? html`<th>Found</th>` : ''}</tr></thead><tbody>
    ${records.map((r, i) => {
      const k = check(r.name, r.purpose);
      return html`<tr><td>${r.purpose}</td><td>${r.type}</td><td class="dns-name"><code>${breakAfterDots(r.name)}</code></td>
        <td class="wrap"><code id="${`rec-${i}`}">${r.value}</code> <button type="button" class="secondary" data-copy="${`rec-${i}`}" aria-label="${`Copy the ${r.purpose} record`}">Copy</button>${r.instead?.length ? html`<br><small class="wrap">or, in its place: ${r.instead.map((x) => `${x.name} ${x.type} ${x.value}`).join(' and ')}</small>` : ''}</td>
        ${result ? html`<td>${foundBadge(k)}</td>` : ''}</tr>`;
    })}
    </tbody></table></div>
    <h2>Receiving</h2>
    <div class="card"><form method="post" action="${path`/domains/${d.name}/receiving`}" class="row">${csrf(c)}
      <label>Receive mail for ${d.name} <select name="receiving"><option value="1" ${d.receiving ? new Html('selected') : ''}>on</option><option value="0" ${d.receiving ? '' : new Html('selected')}>off</option></select></label><button>Save</button></form>
      <form method="post" action="${path`/domains/${d.name}/limits`}" class="row">${csrf(c)}
      <label>Messages per minute <input name="rate_per_minute" inputmode="numeric" value="${limits.ratePerMinute ?? ''}" placeholder="server default"></label>
      <label>Messages per month <input name="monthly_limit" inputmode="numeric" value="${limits.monthlyLimit ?? ''}" placeholder="server default"></label><button>Save limits</button></form></div>`;
}

/** A DNS name that may wrap only after its dots, so no label is cut in two. */
function breakAfterDots(name: string): Html[] {
  return name.split('.').map((label, i, all) => (i < all.length - 1 ? html`${label}.<wbr>` : html`${label}`));
}
