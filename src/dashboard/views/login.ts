import { type Html, html } from '../html.js';

export function loginPage(next: string | undefined, error: string | undefined): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Log in · posthaste</title><link rel="icon" href="/static/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/static/app.css"></head>
    <body><main class="login"><h1>posthaste</h1>${error ? html`<div class="flash error" role="alert">${error}</div>` : ''}
    <form method="post" action="/login"><input type="hidden" name="next" value="${next ?? '/'}">
      <label>E-mail address <input name="email" type="email" autocomplete="username" required autofocus></label>
      <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
      <button>Log in</button></form></main></body></html>`;
}
