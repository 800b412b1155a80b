import fc from 'fast-check';
import t from 'tap';
import { parseAddrSpec, parseMailbox, splitAddressList } from '../../src/domain/addresses.js';
import { CLASSIFICATIONS, classifyReply, parseReply } from '../../src/domain/classify.js';
import { Problems } from '../../src/domain/errors.js';
import { validateSendRequest } from '../../src/domain/send-request.js';
import { routeRecipient } from '../../src/inbound/route.js';
import { readDsnFields } from '../../src/reports/dsn-fields.js';
import { readReport } from '../../src/reports/read.js';
import { isPublicAddress } from '../../src/webhooks/address-guard.js';

// Bounded property runs: each property a fixed number of cases (and the suite's own timeout).
const runs = { numRuns: 2000 };

t.test('the address validator never throws, and what it accepts is clean', async (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (s) => {
      const r = parseMailbox(s);
      if (r.ok) {
        if (/[\r\n\0]/.test(r.value.address) || /[\r\n\0]/.test(r.value.name ?? '')) return false;
        if (!/^[\x21-\x7e]+@[a-z0-9.-]+$/.test(r.value.address)) return false;
      }
      splitAddressList(s);
      return true;
    }),
    runs,
  );
  // Addresses built from the dot-atom grammar with ASCII domains are accepted, domain lower-cased.
  const atom = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,10}$/);
  const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
  const tld = fc.stringMatching(/^[a-z]{2,6}$/);
  fc.assert(
    fc.property(
      fc.array(atom, { minLength: 1, maxLength: 4 }),
      fc.array(label, { minLength: 1, maxLength: 3 }),
      tld,
      (atoms, labels, top) => {
        const local = atoms.join('.');
        const domain = [...labels, top].join('.').toUpperCase();
        const r = parseAddrSpec(`${local}@${domain}`);
        if (local.length > 64) return !r.ok;
        return r.ok && r.value.address === `${local}@${domain.toLowerCase()}`;
      },
    ),
    runs,
  );
  t.pass('ok');
});

t.test('send validation never throws on any JSON object', async (t) => {
  fc.assert(
    fc.property(
      fc.dictionary(
        fc.constantFrom(
          'from',
          'to',
          'cc',
          'subject',
          'body',
          'text_body',
          'html_body',
          'headers',
          'metadata',
          'attachments',
          '__proto__',
          'constructor',
          'x',
        ),
        fc.jsonValue(),
      ),
      (body) => {
        const r = validateSendRequest(body as Record<string, unknown>, { maxRecipients: 50 });
        return r instanceof Problems ? !r.empty : typeof r.subject === 'string';
      },
    ),
    { numRuns: 3000 },
  );
  t.pass('ok');
});

t.test('the reply parser and classifier accept anything and answer a known label', async (t) => {
  fc.assert(
    fc.property(fc.string({ maxLength: 400 }), fc.integer({ min: 0, max: 999 }), (text, code) => {
      const f = parseReply(`${code} ${text}`);
      return (
        (CLASSIFICATIONS as readonly string[]).includes(classifyReply(f)) &&
        (CLASSIFICATIONS as readonly string[]).includes(classifyReply(parseReply(text)))
      );
    }),
    runs,
  );
  t.pass('ok');
});

t.test(
  'routing never accepts a recipient outside the receiving domain, the return path, the feedback or the DMARC address',
  async (t) => {
    const ctx = {
      returnPathDomain: 'bounces.example.net',
      returnPathLabel: 'rp',
      isReturnToken: (token: string) => token === 'a'.repeat(20),
      feedbackAddress: 'fbl@example.net',
      dmarcAddress: 'dmarc@example.net',
      isReceiving: (d: string) => d === 'in.example.com',
    };
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 120 }),
          fc.emailAddress(),
          fc.constantFrom('dmarc@example.net', 'DMARC@Example.Net', 'dmarc+x@example.net', 'dmarc@evil.test'),
          fc
            .tuple(
              fc.string({ maxLength: 30 }),
              fc.constantFrom('in.example.com', 'bounces.example.net', 'example.net', 'evil.test', 'rp.shop.example'),
            )
            .map(([l, d]) => `${l}@${d}`),
        ),
        (addr) => {
          const r = routeRecipient(addr, ctx);
          if (r.kind === 'refused') return true;
          const domain = r.address.slice(r.address.lastIndexOf('@') + 1);
          if (r.kind === 'receiving') return domain === 'in.example.com';
          if (r.kind === 'bounce')
            return domain === 'bounces.example.net' || r.address === `bounces+${'a'.repeat(20)}@rp.shop.example`;
          if (r.kind === 'dmarc') return r.address === 'dmarc@example.net';
          return r.address === 'fbl@example.net';
        },
      ),
      { numRuns: 5000 },
    );
    t.pass('ok');
  },
);

t.test('field blocks and the address guard never throw', async (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 500 }), (s) => Array.isArray(readDsnFields(s).recipients)),
    runs,
  );
  fc.assert(
    fc.property(
      fc.oneof(fc.ipV4(), fc.ipV6(), fc.string({ maxLength: 40 })),
      (a) => typeof isPublicAddress(a) === 'boolean',
    ),
    runs,
  );
  t.pass('ok');
});

t.test('the report reader never throws on arbitrary bytes or mangled reports, and always answers a kind', async (t) => {
  const report = (kind: string, fields: string) =>
    `Content-Type: multipart/report; report-type=${kind}; boundary=z\r\n\r\n--z\r\nContent-Type: message/${kind === 'delivery-status' ? 'delivery-status' : 'feedback-report'}\r\n\r\n${fields}\r\n--z--\r\n`;
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.uint8Array({ maxLength: 2000 }).map((b) => Buffer.from(b)),
        fc.string({ maxLength: 600 }).map((s) => Buffer.from(report('delivery-status', s))),
        fc.string({ maxLength: 600 }).map((s) => Buffer.from(report('feedback-report', s))),
      ),
      async (raw) => {
        const r = readReport(raw);
        return (
          ['dsn', 'arf', 'none'].includes(r.kind) &&
          r.recipients.every((x) => typeof x.address === 'string' && typeof x.suppress === 'boolean')
        );
      },
    ),
    { numRuns: 300 },
  );
  t.pass('ok');
});
