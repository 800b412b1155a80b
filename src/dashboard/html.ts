/**
 * HTML built by one tagged template that escapes every interpolated value unless it is already
 * `Html`: everything the dashboard shows is someone else's input (subjects, names, mail,
 * webhook responses), so escaping is the default and trust is the exception, made explicit.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

type Value = Html | string | number | boolean | null | undefined | Value[];

function render(v: Value): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** A value for an href built from parts: each part percent-encoded. */
export function path(strings: TemplateStringsArray, ...values: Array<string | number>): string {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += encodeURIComponent(String(values[i]!)) + strings[i + 1]!;
  return out;
}
