import type { Customer, Session } from '../store/model.js';
import { type Html, html } from './html.js';

export interface PageContext {
  session: Session & { id: string };
  /** The customer shown. */
  customer: Customer;
  /** Those the user may switch to (an admin: all; a customer's user: their own). */
  customers: Customer[];
  section: string;
  /** The server's clock when the page is made: what times on it are shown relative to. */
  now: number;
  /** What the page says first: a notice, an error (fixed sentences, or what a POST answered itself). */
  notice?: string | undefined;
  error?: string | undefined;
}

const SECTIONS: Array<[string, string, string]> = [
  ['overview', '/', 'Overview'],
  ['messages', '/messages', 'Messages'],
  ['keys', '/keys', 'API keys'],
  ['domains', '/domains', 'Domains'],
  ['webhooks', '/webhooks', 'Webhooks'],
  ['suppressions', '/suppressions', 'Suppressions'],
  ['inbound', '/inbound', 'Inbound'],
];

/** Every signed-in page: header with the customer switcher (admins) and logout, navigation, the page. */
export function layout(c: PageContext, title: string, body: Html): Html {
  const admin = c.session.user.role === 'admin';
  const sections = admin
    ? [...SECTIONS, ['customers', '/customers', 'Customers'] as [string, string, string]]
    : SECTIONS;
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · ${c.customer.name} · posthaste</title><link rel="icon" href="/static/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/static/app.css"><script src="/static/app.js" defer></script></head>
<body><a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/">posthaste</a>
${
  admin
    ? html`<form method="post" action="/customer" class="row"><input type="hidden" name="_csrf" value="${c.session.csrf}"><label><span>Customer</span><select name="customer">${c.customers.map((x) => html`<option ${x.id === c.customer.id ? html`selected` : ''}>${x.name}</option>`)}</select></label><button class="secondary">Show</button></form>`
    : html`<span>${c.customer.name}</span>`
}
<span>${c.session.user.email}</span>
<form method="post" action="/logout" class="inline"><input type="hidden" name="_csrf" value="${c.session.csrf}"><button class="secondary">Log out</button></form></header>
<nav class="main" aria-label="Sections">${sections.map(([id, href, label]) => html`<a href="${href}" ${id === c.section ? html`aria-current="page"` : ''}>${label}</a>`)}</nav>
<main id="main"><h1>${title}</h1>
${c.notice ? html`<div class="flash" role="status">${c.notice}</div>` : ''}${c.error ? html`<div class="flash error" role="alert">${c.error}</div>` : ''}
${body}</main></body></html>`;
}
