/**
 * DMARC aggregate reports (RFC 7489 appendix C, and the schema of its successor,
 * `urn:ietf:params:xml:ns:dmarc-2.0`): a receiver's daily count, per source address, of the mail
 * it saw claiming a domain and how SPF, DKIM and their alignment came out. Pure: the bytes of a
 * mail in, the reports it carries out (or why each could not be read), no I/O.
 *
 * Providers mail them as an attachment: Google a `.zip`, Microsoft and Yahoo a `.xml.gz` (gzip),
 * some the bare XML, occasionally as the whole body. Each is unpacked within a limit (a
 * compressed bomb stops at it) and parsed with fast-xml-parser with entities off; a document with
 * a DOCTYPE (the door to entity expansion and external entities) is refused before the parser
 * sees it, as is one nested deeper than any report is.
 */

import { gunzipSync } from 'node:zlib';
import { XMLParser } from 'fast-xml-parser';
import { unzipSync } from 'fflate';
import { MAX_REPORT_BYTES, tooComplex } from '../mime/limits.js';
import { contentType, field, type Part, parseMessage, walk } from '../mime/reader.js';
import type { DmarcReportInput as DmarcReport, DmarcRow } from '../store/model.js';

/** Most bytes a report's XML may unpack to (a large receiver's day for a busy domain is a few MiB). */
export const MAX_AGGREGATE_XML_BYTES = 16 * 1024 * 1024;
/** Most reports read from one mail. */
const MAX_ATTACHMENTS = 10;
/** A report is five elements deep; anything much deeper is not one. */
const MAX_DEPTH = 16;

export type { DmarcReport };

/** One attachment (or body) of a mail, read: a report, or why it is not one. */
export type AggregateRead =
  | { kind: 'report'; report: DmarcReport }
  | { kind: 'unreadable'; name: string; error: string };

/** Every aggregate report a mail carries; a mail that carries none answers one `unreadable`. Never throws. */
export function readAggregateReports(raw: Buffer): AggregateRead[] {
  if (tooComplex(raw)) return [{ kind: 'unreadable', name: '', error: 'the message is too complex to read' }];
  let root: Part;
  try {
    root = parseMessage(raw.subarray(0, MAX_REPORT_BYTES).toString('latin1'));
  } catch {
    return [{ kind: 'unreadable', name: '', error: 'the message could not be parsed' }];
  }
  const candidates = walk(root).filter(isCandidate).slice(0, MAX_ATTACHMENTS);
  if (candidates.length === 0)
    return [{ kind: 'unreadable', name: '', error: 'no XML, gzip or zip attachment was found' }];
  return candidates.map((part) => {
    const name = fileName(part);
    try {
      const xml = unpack(name, part.type, Buffer.from(part.body, 'latin1'));
      return { kind: 'report', report: parseAggregateXml(xml) };
    } catch (e) {
      return { kind: 'unreadable', name, error: e instanceof Error ? e.message : String(e) };
    }
  });
}

const PACKED = /^application\/(x-)?(gzip|gzip-compressed|zip|x-zip-compressed|octet-stream)$/;

function isCandidate(part: Part): boolean {
  if (part.children.length) return false;
  const name = fileName(part).toLowerCase();
  return (
    /\.(xml|gz|zip)$/.test(name) ||
    /^(application|text)\/xml$/.test(part.type) ||
    (PACKED.test(part.type) && part.type !== 'application/octet-stream')
  );
}

function fileName(part: Part): string {
  const disposition = field(part.headers, 'content-disposition');
  return (
    (disposition ? contentType(`x/x; ${disposition.replace(/^[^;]*;?/, '')}`).params.filename : undefined) ??
    part.params.name ??
    ''
  );
}

/** The XML of an attachment: gunzipped, unzipped (the first .xml entry) or as it is, within MAX_AGGREGATE_XML_BYTES. */
export function unpack(name: string, type: string, bytes: Buffer): Buffer {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      return gunzipSync(bytes, { maxOutputLength: MAX_AGGREGATE_XML_BYTES });
    } catch (e) {
      throw new Error(isTooLarge(e) ? 'the gzip unpacks past the size limit' : 'the gzip is damaged');
    }
  }
  if (bytes[0] === 0x50 && bytes[1] === 0x4b) return unzipFirstXml(bytes);
  if (/\.(gz|zip)$/i.test(name) || /zip/.test(type)) throw new Error('the attachment is not the gzip or zip it says');
  if (bytes.length > MAX_AGGREGATE_XML_BYTES) throw new Error('the XML is past the size limit');
  return bytes;
}

const isTooLarge = (e: unknown) => e instanceof RangeError || (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';

function unzipFirstXml(bytes: Buffer): Buffer {
  let seen = false;
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes, {
      // One entry, the first XML one; its declared size checked before anything is inflated.
      filter: (f) => {
        if (seen || !/\.xml$/i.test(f.name)) return false;
        seen = true;
        if (f.originalSize > MAX_AGGREGATE_XML_BYTES) throw new Error('the zip unpacks past the size limit');
        return true;
      },
    });
  } catch (e) {
    throw new Error(e instanceof Error && /size limit/.test(e.message) ? e.message : 'the zip is damaged');
  }
  const xml = Object.values(files)[0];
  if (!xml) throw new Error('the zip holds no .xml file');
  // An entry that declared less than it holds is cut at the declared size by the inflater; a
  // declared size past the limit was refused above.
  return Buffer.from(xml.buffer, xml.byteOffset, xml.byteLength);
}

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  processEntities: false,
  htmlEntities: false,
  parseTagValue: false,
  trimValues: true,
  isArray: (name) => name === 'record' || name === 'dkim' || name === 'spf',
});

/** A report's XML read, or an Error saying what is wrong with it. */
export function parseAggregateXml(xml: Buffer): DmarcReport {
  const text = xml.toString('utf8');
  if (/<!DOCTYPE|<!ENTITY/i.test(text))
    throw new Error('the XML declares a DOCTYPE or entities, which a report never does');
  if (nestingDepth(text) > MAX_DEPTH) throw new Error('the XML is nested deeper than a report is');
  let doc: Record<string, unknown>;
  try {
    doc = parser.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`the XML does not parse: ${e instanceof Error ? e.message.split('\n')[0] : e}`);
  }
  const feedback = obj(doc.feedback, 'feedback');
  const meta = obj(feedback.report_metadata, 'report_metadata');
  const range = obj(meta.date_range, 'report_metadata/date_range');
  const published = obj(feedback.policy_published, 'policy_published');
  const records = feedback.record;
  return {
    org: str(meta.org_name, 'org_name'),
    email: opt(meta.email),
    reportId: str(meta.report_id, 'report_id'),
    begin: seconds(range.begin, 'date_range/begin') * 1000,
    end: seconds(range.end, 'date_range/end') * 1000,
    domain: str(published.domain, 'policy_published/domain').toLowerCase(),
    policy: {
      p: opt(published.p) ?? 'none',
      sp: opt(published.sp),
      pct: published.pct === undefined ? null : seconds(published.pct, 'policy_published/pct'),
      adkim: opt(published.adkim) ?? 'r',
      aspf: opt(published.aspf) ?? 'r',
    },
    rows: Array.isArray(records) ? records.map((r, i) => row(obj(r, `record ${i + 1}`))) : [],
  };
}

function row(r: Record<string, unknown>): DmarcRow {
  const r0 = obj(r.row, 'record/row');
  const evaluated = obj(r0.policy_evaluated, 'row/policy_evaluated');
  const ids = obj(r.identifiers, 'record/identifiers');
  const auth = r.auth_results === undefined || r.auth_results === '' ? {} : obj(r.auth_results, 'auth_results');
  const first = (v: unknown) => (Array.isArray(v) ? v[0] : v);
  return {
    sourceIp: str(r0.source_ip, 'row/source_ip'),
    count: seconds(r0.count, 'row/count'),
    disposition: opt(evaluated.disposition) ?? 'none',
    dkimAligned: opt(first(evaluated.dkim)) === 'pass',
    spfAligned: opt(first(evaluated.spf)) === 'pass',
    headerFrom: str(ids.header_from, 'identifiers/header_from').toLowerCase(),
    envelopeFrom: opt(ids.envelope_from)?.toLowerCase() ?? null,
    dkim: list(auth.dkim).map((d) => ({
      domain: str(d.domain, 'auth_results/dkim/domain').toLowerCase(),
      detail: opt(d.selector),
      result: opt(d.result) ?? 'none',
    })),
    spf: list(auth.spf).map((s) => ({
      domain: str(s.domain, 'auth_results/spf/domain').toLowerCase(),
      detail: opt(s.scope),
      result: opt(s.result) ?? 'none',
    })),
  };
}

function obj(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`<${what}> is missing`);
  return v as Record<string, unknown>;
}

function list(v: unknown): Record<string, unknown>[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object');
}

function opt(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function str(v: unknown, what: string): string {
  const s = opt(v);
  if (s === null) throw new Error(`<${what}> is missing`);
  return s;
}

/** A non-negative integer element (seconds, counts, a percentage). */
function seconds(v: unknown, what: string): number {
  const s = str(v, what);
  if (!/^\d{1,15}$/.test(s)) throw new Error(`<${what}> is not a whole number: ${s.slice(0, 40)}`);
  return Number(s);
}

/** The deepest element nesting of a document, in one pass over its tags. */
function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  for (const m of text.matchAll(/<(\/?)[A-Za-z_][^>]*?(\/?)>/g)) {
    if (m[1]) depth--;
    else if (!m[2]) max = Math.max(max, ++depth);
  }
  return max;
}
