import { html } from '../html.js';
import type { PageContext } from '../layout.js';

// What every page body uses: the form's CSRF field, and times.

/** A time as the pages show it: "2026-11-23 10:00:00Z", or a dash. */
export const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + 'Z');

/** The session's CSRF token, the hidden field of every form that posts. */
export const csrf = (c: PageContext) => html`<input type="hidden" name="_csrf" value="${c.session.csrf}">`;
