// DMARC aggregate reports as the large receivers mail them, for the tests: the XML of RFC 7489's
// schema (with Microsoft's namespaces and elements, or the successor's namespace) and the mail
// that carries it as an attachment.

import type { DmarcReportInput } from '../../src/store/model.js';

export interface Rec {
  ip: string;
  count: number;
  dkim: 'pass' | 'fail';
  spf: 'pass' | 'fail';
  from: string;
  envelope?: string;
  authDkim?: Array<[string, string, string]>;
  authSpf?: Array<[string, string]>;
}

const record = (r: Rec, msStyle: boolean) => `
  <record>
    <row>
      <source_ip>${r.ip}</source_ip>
      <count>${r.count}</count>
      <policy_evaluated>
        <disposition>${r.dkim === 'pass' || r.spf === 'pass' ? 'none' : 'quarantine'}</disposition>
        <dkim>${r.dkim}</dkim>
        <spf>${r.spf}</spf>
      </policy_evaluated>
    </row>
    <identifiers>
      ${msStyle ? '<envelope_to>example.net</envelope_to>' : ''}
      ${r.envelope ? `<envelope_from>${r.envelope}</envelope_from>` : ''}
      <header_from>${r.from}</header_from>
    </identifiers>
    <auth_results>
      ${(r.authDkim ?? []).map(([d, s, res]) => `<dkim><domain>${d}</domain><selector>${s}</selector><result>${res}</result></dkim>`).join('')}
      ${(r.authSpf ?? []).map(([d, res]) => `<spf><domain>${d}</domain>${msStyle ? '<scope>mfrom</scope>' : ''}<result>${res}</result></spf>`).join('')}
    </auth_results>
  </record>`;

export function reportXml(
  org: string,
  email: string,
  id: string,
  records: Rec[],
  opts: { ns?: string; ms?: boolean } = {},
) {
  return `<?xml version="1.0" encoding="UTF-8" ?>
<feedback${opts.ns ? ` xmlns="${opts.ns}"` : opts.ms ? ' xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"' : ''}>
  ${opts.ms || opts.ns ? '<version>1.0</version>' : ''}
  <report_metadata>
    <org_name>${org}</org_name>
    <email>${email}</email>
    <report_id>${id}</report_id>
    <date_range><begin>1795737600</begin><end>1795823999</end></date_range>
  </report_metadata>
  <policy_published>
    <domain>Acme.example</domain>
    <adkim>r</adkim><aspf>r</aspf><p>quarantine</p><sp>none</sp><pct>100</pct>
    ${opts.ns ? '<np>reject</np><discovery_method>treewalk</discovery_method>' : ''}
  </policy_published>
  ${records.map((r) => record(r, !!opts.ms)).join('')}
</feedback>`;
}

/** A report mail: a short text part and the attachment, base64, as the providers send them. */
export function reportMail(from: string, name: string, type: string, bytes: Buffer): Buffer {
  const b64 = bytes.toString('base64').replace(/.{76}/g, '$&\r\n');
  return Buffer.from(
    `From: ${from}\r\nTo: dmarc@reports.example\r\nSubject: Report domain: acme.example Submitter: x Report-ID: <1>\r\n` +
      'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b1"\r\n\r\n' +
      '--b1\r\nContent-Type: text/plain\r\n\r\nThis is an aggregate report.\r\n' +
      `--b1\r\nContent-Type: ${type}; name="${name}"\r\nContent-Disposition: attachment; filename="${name}"\r\n` +
      `Content-Transfer-Encoding: base64\r\n\r\n${b64}\r\n--b1--\r\n`,
    'latin1',
  );
}

export const RECORDS: Rec[] = [
  {
    ip: '192.0.2.10',
    count: 1200,
    dkim: 'pass',
    spf: 'pass',
    from: 'acme.example',
    envelope: 'bounces.acme.example',
    authDkim: [['acme.example', 'ph1', 'pass']],
    authSpf: [['bounces.acme.example', 'pass']],
  },
  {
    ip: '2001:db8::25',
    count: 3,
    dkim: 'fail',
    spf: 'fail',
    from: 'acme.example',
    authDkim: [['spoof.example', 'x', 'fail']],
    authSpf: [['spoof.example', 'softfail']],
  },
  {
    ip: '198.51.100.7',
    count: 41,
    dkim: 'pass',
    spf: 'fail',
    from: 'acme.example',
    authDkim: [
      ['acme.example', 'ph1', 'pass'],
      ['esp.example', 's1', 'pass'],
    ],
    authSpf: [['esp.example', 'pass']],
  },
];

/** A report as the reader gives it (store/model's DmarcReportInput) with RECORDS as its rows, to keep in a store directly. */
export function storedReport(
  org: string,
  reportId: string,
  domain: string,
  begin: number,
  end: number,
): DmarcReportInput {
  return {
    org,
    email: null,
    reportId,
    domain,
    begin,
    end,
    policy: { p: 'none', sp: null, pct: null, adkim: 'r', aspf: 'r' },
    rows: RECORDS.map((r) => ({
      sourceIp: r.ip,
      count: r.count,
      disposition: 'none',
      dkimAligned: r.dkim === 'pass',
      spfAligned: r.spf === 'pass',
      headerFrom: r.from,
      envelopeFrom: null,
      dkim: [],
      spf: [],
    })),
  };
}
