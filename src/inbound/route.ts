import { parseAddrSpec } from '../domain/addresses.js';
import { mailtoToken } from '../domain/unsubscribe.js';

export type Route =
  | { kind: 'receiving'; address: string; domain: string }
  | { kind: 'bounce'; address: string }
  | { kind: 'feedback'; address: string }
  | { kind: 'dmarc'; address: string }
  /** A List-Unsubscribe mailto address (domain/unsubscribe.ts): the recipient row its token names. */
  | { kind: 'unsubscribe'; address: string; recipientId: number }
  | { kind: 'refused'; reason: string };

/**
 * Where a recipient goes, decided at RCPT time. posthaste never relays: a recipient is accepted
 * only for a receiving domain, a return-path address, the feedback address, the DMARC report
 * address, or an unsubscribe address (unsubscribe+<token> at the return path domain, for a token
 * posthaste made). Address tricks are
 * refused outright: source routes, the percent hack, bang paths, quoted local parts and address
 * literals, whatever domain they end in.
 */
export function routeRecipient(
  raw: string,
  ctx: {
    returnPathDomain: string;
    /** A sending domain's own return path host is <label>.<domain> (docs/delivery.md, "Sending identities"). */
    returnPathLabel: string;
    /** Whether a return-path token is one posthaste made (domain/return-path.ts): it, not the domain, decides. */
    isReturnToken: (token: string) => boolean;
    feedbackAddress: string;
    dmarcAddress: string;
    /** The recipient row an unsubscribe token names, or undefined when posthaste did not make it. */
    unsubscribeRecipient?: (token: string) => number | undefined;
    isReceiving: (domain: string) => boolean;
  },
): Route {
  const address = raw.trim();
  if (address.startsWith('@') || address.includes(':'))
    return { kind: 'refused', reason: 'source routes are not accepted' };
  if (address.startsWith('"')) return { kind: 'refused', reason: 'quoted local parts are not accepted' };
  const at = address.lastIndexOf('@');
  const local = address.slice(0, at);
  if (/[%!@]/.test(local)) return { kind: 'refused', reason: 'relaying is not offered' };
  const parsed = parseAddrSpec(address);
  if (!parsed.ok) return { kind: 'refused', reason: parsed.error };
  const { domain } = parsed.value;
  const normal = `${parsed.value.local.toLowerCase()}@${domain}`;
  if (ctx.feedbackAddress && normal === ctx.feedbackAddress.toLowerCase()) return { kind: 'feedback', address: normal };
  if (ctx.dmarcAddress && normal === ctx.dmarcAddress.toLowerCase()) return { kind: 'dmarc', address: normal };
  const unsubscribe = mailtoToken(parsed.value.local);
  const recipientId =
    unsubscribe && domain === ctx.returnPathDomain.toLowerCase() ? ctx.unsubscribeRecipient?.(unsubscribe) : undefined;
  if (recipientId !== undefined) return { kind: 'unsubscribe', address: normal, recipientId };
  const verp = /^bounces\+([0-9a-z]{20})$/i.exec(parsed.value.local);
  if (verp && domain === ctx.returnPathDomain.toLowerCase()) return { kind: 'bounce', address: normal };
  // Any domain's return path host: taken only for a token posthaste made, whichever domain it is on.
  if (verp && domain.startsWith(`${ctx.returnPathLabel}.`) && ctx.isReturnToken(verp[1]!.toLowerCase()))
    return { kind: 'bounce', address: normal };
  if (ctx.isReceiving(domain)) return { kind: 'receiving', address: normal, domain };
  return { kind: 'refused', reason: 'relaying denied' };
}
