import dgram from 'node:dgram';
import * as dnsPacket from 'dns-packet';

export interface ZoneRecords {
  /** One entry per record: a text (split into strings of 255 here), or the record's strings as a zone file gives them. */
  TXT?: Array<string | string[]>;
  MX?: Array<{ preference: number; exchange: string }>;
  A?: string[];
  AAAA?: string[];
  TLSA?: dnsPacket.TlsaData[];
  /** Reverse records, under d.c.b.a.in-addr.arpa or the ip6.arpa nibbles: the names an address has. */
  PTR?: string[];
  /** An alias: answered to a CNAME query, and to any other type with the target's records after it, as a recursive resolver answers. */
  CNAME?: string;
}

/**
 * A real DNS server on loopback (UDP) answering from a mutable zone, for tests that must not
 * send a query off the machine. Names missing from the zone answer NXDOMAIN; `failures` makes a
 * name answer SERVFAIL, or not at all ('timeout').
 */
export class TestDnsServer {
  zone = new Map<string, ZoneRecords>();
  failures = new Map<string, 'SERVFAIL' | 'timeout'>();
  queries: Array<{ name: string; type: string }> = [];
  /**
   * Zones (apex names) this server answers for as a validating resolver would for signed ones: the
   * AD bit on every answer and denial under them, to a query that asks (AD or DO set, RFC 6840 5.7).
   */
  signed = new Set<string>();
  /** Answers that change between queries (DNS rebinding): called with how many times name/type was asked. */
  dynamic = new Map<string, (type: string, count: number) => ZoneRecords | undefined>();
  private counts = new Map<string, number>();
  private socket = dgram.createSocket('udp4');
  port = 0;

  async start(): Promise<this> {
    this.socket.on('message', (msg, rinfo) => this.answer(msg, rinfo));
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', () => resolve()));
    this.port = this.socket.address().port;
    return this;
  }

  get server(): string {
    return `127.0.0.1:${this.port}`;
  }

  set(name: string, records: ZoneRecords): void {
    this.zone.set(name.toLowerCase(), { ...this.zone.get(name.toLowerCase()), ...records });
  }

  private answer(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const q = query.questions?.[0];
    if (!q) return;
    const name = q.name.toLowerCase();
    this.queries.push({ name, type: q.type });
    const failure = this.failures.get(name);
    if (failure === 'timeout') return;
    const key = `${name}/${q.type}`;
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    const dyn = this.dynamic.get(name);
    const records = dyn ? dyn(q.type, count) : this.zone.get(name);
    const answers: dnsPacket.Answer[] = [];
    if (records?.CNAME) {
      answers.push({ type: 'CNAME', name: q.name, ttl: 60, data: records.CNAME });
      const target = this.zone.get(records.CNAME.toLowerCase().replace(/\.$/, ''));
      if (q.type !== 'CNAME' && target) answers.push(...recordsOf(target, q.type, records.CNAME.replace(/\.$/, '')));
    } else if (records) answers.push(...recordsOf(records, q.type, q.name));
    const rcode = failure === 'SERVFAIL' ? 'SERVFAIL' : records ? 'NOERROR' : 'NXDOMAIN';
    const asked = query.flag_ad || (query.additionals ?? []).some((a) => a.type === 'OPT' && a.flag_do);
    const validated =
      asked && rcode !== 'SERVFAIL' && [...this.signed].some((apex) => name === apex || name.endsWith(`.${apex}`));
    const response = dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags:
        dnsPacket.RECURSION_DESIRED |
        dnsPacket.RECURSION_AVAILABLE |
        (validated ? dnsPacket.AUTHENTIC_DATA : 0) |
        rcodeFlag(rcode),
      questions: query.questions,
      answers,
    });
    this.socket.send(response, rinfo.port, rinfo.address);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}

/** The records of one type at a name, as answers. */
function recordsOf(records: ZoneRecords, type: string, name: string): dnsPacket.Answer[] {
  const ttl = 60;
  const answers: dnsPacket.Answer[] = [];
  if (type === 'TXT')
    for (const t of records.TXT ?? []) answers.push({ type: 'TXT', name, ttl, data: Array.isArray(t) ? t : chunk(t) });
  if (type === 'MX') for (const m of records.MX ?? []) answers.push({ type: 'MX', name, ttl, data: m });
  if (type === 'A') for (const a of records.A ?? []) answers.push({ type: 'A', name, ttl, data: a });
  if (type === 'AAAA') for (const a of records.AAAA ?? []) answers.push({ type: 'AAAA', name, ttl, data: a });
  if (type === 'TLSA') for (const r of records.TLSA ?? []) answers.push({ type: 'TLSA', name, ttl, data: r });
  if (type === 'PTR') for (const p of records.PTR ?? []) answers.push({ type: 'PTR', name, ttl, data: p });
  return answers;
}

function rcodeFlag(rcode: 'NOERROR' | 'NXDOMAIN' | 'SERVFAIL'): number {
  return { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3 }[rcode];
}

/** TXT strings are at most 255 octets each; long records (DKIM keys) are split. */
function chunk(s: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += 255) out.push(s.slice(i, i + 255));
  return out.length ? out : [''];
}

/** The strings of TXT data as a zone file writes it (`"a" "b"`, with \" and \\ escapes): what a server loaded from that file serves. */
export function zoneStrings(value: string): string[] {
  const strings = [...value.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, '$1'));
  if (strings.length === 0 || value.replace(/"((?:[^"\\]|\\.)*)"/g, '').trim() !== '')
    throw new Error(`not zone-file TXT data: ${value}`);
  return strings;
}
