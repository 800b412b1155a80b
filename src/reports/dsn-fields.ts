/**
 * RFC 3464 delivery-status fields, as real MTAs write them: per-message fields, then one block
 * of per-recipient fields for each recipient. Read without trusting the blank lines between the
 * blocks (AOL, McAfee and SurfControl leave them out; Amazon SES puts Action before
 * Final-Recipient): a recipient block starts at each new Final-Recipient or Original-Recipient.
 */

import type { Action } from '../domain/report.js';
import { type Field, parseFields } from '../mime/reader.js';

export type { Action };

export interface DsnBlock {
  finalRecipient?: string;
  originalRecipient?: string;
  action?: Action;
  status?: string;
  diagnosticCode?: string;
  /** The Diagnostic-Code's type: `smtp` (a server's reply), `x-unix` (a local delivery program's output), ... */
  diagnosticType?: string;
  remoteMta?: string;
}

export interface DsnFields {
  reportingMta?: string;
  /** The envelope sender the report names (Postfix: "X-Postfix-Sender: rfc822; shop@example.com"): never a failed recipient. */
  sender?: string;
  recipients: DsnBlock[];
}

/** RFC 3464 actions, and the misspellings seen in the wild (sisimai's list; OpenSMTPD: "Action: error"). */
const ACTIONS: Record<string, Action> = {
  failed: 'failed',
  failure: 'failed',
  fail: 'failed',
  error: 'failed',
  delayed: 'delayed',
  delay: 'delayed',
  expired: 'failed',
  expanded: 'expanded',
  delivered: 'delivered',
  deliverable: 'delivered',
  relayed: 'relayed',
};

const RECIPIENT_FIELDS = new Set([
  'final-recipient',
  'original-recipient',
  'action',
  'status',
  'diagnostic-code',
  'remote-mta',
  'last-attempt-date',
  'will-retry-until',
  'x-actual-recipient',
  'final-log-id',
]);

/**
 * "rfc822; bob@example.net" → "bob@example.net": the address type and angle brackets removed, a
 * source route ("@mx.example.net:bob@example.net") dropped, the decorations of undecorated()
 * removed, and an address found inside what some MTAs write there instead (Exim:
 * "|/usr/bin/program bob@example.net /home/bob").
 */
export function typedAddress(v: string | undefined): string | undefined {
  if (!v) return undefined;
  // Exchange's X.400 form names the Internet address in a domain-defined attribute:
  // "c=US;a= ;p=IKON;o=Nexus2;dda:SMTP=bob@example.net;"
  const dda = /\bdda:smtp=([^;\s]+@[^;\s]+)/i.exec(v);
  if (dda) return undecorated(dda[1]!);
  let a = (/^[A-Za-z0-9-]+\s*;/.test(v) ? v.slice(v.indexOf(';') + 1) : v).trim().replace(/^<|>$/g, '').trim();
  a = undecorated(a.replace(/^(@[^:,\s]+[,:])+/, ''));
  if (/^[^\s@]+@[^\s@]+$/.test(a) || /^"[^"]*"@[^\s@]+$/.test(a)) return a;
  const found = /[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+/.exec(a)?.[0];
  return found ? undecorated(found) : undefined;
}

/**
 * A recipient field that names a local part alone ("rfc822; alice", "rfc822; <alice>"), as an MTA
 * writes it for a local user: kept, for the reader to complete with the original recipient's
 * domain (reports/recipients.ts). A pipe or a path is no local part.
 */
export function bareLocalPart(v: string | undefined): string | undefined {
  const a = (v ?? '')
    .replace(/^[A-Za-z0-9-]+\s*;/, '')
    .trim()
    .replace(/^<|>$/g, '')
    .trim();
  return /^[A-Za-z0-9._+-]+$/.test(a) && /[A-Za-z0-9]/.test(a) ? a : undefined;
}

/**
 * An address without what mail systems write around it, which no recipient's address holds:
 * Exchange's type prefixes ("SMTP:bob@example.net", "smtp=bob@example.net"), "mailto:", its
 * IMCEA encapsulation ("IMCEASMTP-bob+40example+2Enet@exchange.example.org" is
 * bob@example.net), quotes and brackets around it, and Sendmail's "bob@example.net...User unknown".
 */
export function undecorated(address: string): string {
  let a = address.trim();
  if (!/^"[^"]*"@/.test(a)) a = a.replace(/^["'(<[]+/, '');
  a = a.replace(/["')>\],;:]+$/, '').replace(/(@[^@\s]*?)\.+$/, '$1');
  a = a.replace(/^(smtp|rfc-?822|mailto|x-?smtp|ex|internet)\s*[:=]\s*/i, '').replace(/^\d{3}-address:/i, '');
  const imcea = /^IMCEASMTP-([^@]+)@/i.exec(a);
  if (imcea) a = imcea[1]!.replace(/\+([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return a.replace(/(@[^@\s.]+(\.[^@\s.]+)*)\.{3}.*$/, '$1');
}

/** An address with a domain that could be on the Internet (not "bob@server"). */
export function routable(a: string | undefined): boolean {
  return !!a && /@[^@\s]+\.[A-Za-z0-9-]+$/.test(a);
}

/** A Status field's code: "5.1.1", "5.0.0 (permanent failure)", "4.4.7 (Delivery time expired)". */
export function statusCode(v: string | undefined): string | undefined {
  return /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(v ?? '')?.[1];
}

export function readDsnFields(text: string): DsnFields {
  const out: DsnFields = { recipients: [] };
  let block: DsnBlock | null = null;
  let seen = new Set<string>();
  for (const chunk of text.replace(/\r\n/g, '\n').split(/\n[ \t]*\n/)) {
    // A blank line ends a recipient block that has a recipient.
    if (block && (block.finalRecipient || block.originalRecipient)) block = null;
    for (const f of parseFields(chunk)) {
      if (!RECIPIENT_FIELDS.has(f.name)) {
        if (f.name === 'reporting-mta' && !out.reportingMta)
          out.reportingMta = typedAddress(f.value) ?? f.value.replace(/^[a-z]+;\s*/i, '');
        if ((f.name === 'x-postfix-sender' || f.name === 'x-sender') && !out.sender) out.sender = typedAddress(f.value);
        continue;
      }
      const starts = f.name === 'final-recipient' || f.name === 'original-recipient';
      if (
        !block ||
        (starts && seen.has(f.name)) ||
        (f.name === 'original-recipient' && block.finalRecipient && (block.action || block.status))
      ) {
        block = {};
        seen = new Set();
        out.recipients.push(block);
      }
      seen.add(f.name);
      apply(block, f);
    }
  }
  out.recipients = out.recipients.filter((b) => b.finalRecipient || b.originalRecipient);
  return out;
}

function apply(b: DsnBlock, f: Field): void {
  switch (f.name) {
    case 'final-recipient':
    case 'x-actual-recipient': {
      const a = typedAddress(f.value) ?? bareLocalPart(f.value);
      if (a && !b.finalRecipient) b.finalRecipient = a;
      break;
    }
    case 'original-recipient': {
      const a = typedAddress(f.value) ?? bareLocalPart(f.value);
      if (a) b.originalRecipient = a;
      break;
    }
    case 'action': {
      const a = ACTIONS[f.value.toLowerCase().split(/[\s(;]/)[0] ?? ''];
      if (a) b.action = a;
      break;
    }
    case 'status': {
      const s = statusCode(f.value);
      if (s) b.status = s;
      break;
    }
    case 'diagnostic-code': {
      const type = /^([A-Za-z-]+)\s*;/.exec(f.value)?.[1]?.toLowerCase();
      const d = f.value
        .replace(/^[A-Za-z-]+;\s*/, '')
        .replace(/\s+/g, ' ')
        .trim();
      if (d) b.diagnosticCode = d;
      if (type) b.diagnosticType = type;
      break;
    }
    case 'remote-mta': {
      const r = f.value.replace(/^[A-Za-z-]+;\s*/, '').trim();
      if (r) b.remoteMta = r;
      break;
    }
  }
}

/** Whether text looks like delivery-status fields (a text/plain part some MTAs use for them). */
export function looksLikeDsnFields(text: string): boolean {
  return /^(final|original)-recipient:/im.test(text) && /^(action|status|diagnostic-code):/im.test(text);
}
