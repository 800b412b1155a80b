import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Readable } from 'node:stream';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import DataStream from 'nodemailer/lib/smtp-connection/data-stream.js';
import t from 'tap';
import { Problems } from '../../../src/domain/errors.js';
import { type SendRequest, validateSendRequest } from '../../../src/domain/send-request.js';
import { composeMessage } from '../../../src/mime/compose.js';
import { bodyHash, headerFields, signMessage } from '../../../src/outbound/signing/dkim.js';

// Every signature made here is checked by two verifiers that are not ours: mailauth's, and dkimpy
// (Debian's python3-dkim) where it is installed (CI installs it). Each checks the message as it
// goes on the wire: through nodemailer's data stream (bare LF sent as CRLF, leading dots doubled),
// then read back as the receiving side reads it.

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = {
  domain: 'example.com',
  selector: 'sel1',
  privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
};
const record = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
const DNS_NAME = 'sel1._domainkey.example.com';

async function onTheWire(message: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const stream = Readable.from([message]).pipe(new DataStream());
  for await (const c of stream) chunks.push(c as Buffer);
  const sent = Buffer.concat(chunks).toString('latin1');
  // The receiver's side: the terminating dot line removed, doubled dots undone.
  return Buffer.from(sent.replace(/\.\r\n$/, '').replace(/(^|\r\n)\.\./g, '$1.'), 'latin1');
}

async function mailauthResult(message: Buffer): Promise<string> {
  const verified = await dkimVerify(message, {
    resolver: async (name: string, type: string) => (type === 'TXT' && name === DNS_NAME ? [[record]] : []),
  } as never);
  return verified.results.map((r: { status: { result: string } }) => r.status.result).join(',');
}

const PY_VERIFY = `
import sys, dkim
record = sys.argv[1].encode()
def txt(name, timeout=5):
    return record if name.decode().rstrip('.') == '${DNS_NAME}' else None
print('pass' if dkim.verify(sys.stdin.buffer.read(), dnsfunc=txt) else 'fail')
`;
const PYTHON = '/usr/bin/python3';
const dkimpy = existsSync('/usr/lib/python3/dist-packages/dkim/__init__.py') && existsSync(PYTHON);
function dkimpyResult(message: Buffer): string {
  return execFileSync(PYTHON, ['-c', PY_VERIFY, record], { input: message }).toString().trim();
}

/** mailauth's body hash of the same message (its own relaxed canonicalisation), for comparison. */
async function mailauthBodyHash(message: Buffer): Promise<string> {
  const r = await dkimSign(message, {
    signatureData: [
      {
        signingDomain: key.domain,
        selector: key.selector,
        privateKey: key.privateKey,
        algorithm: 'rsa-sha256',
        canonicalization: 'relaxed/relaxed',
      },
    ],
  } as unknown as Parameters<typeof dkimSign>[1]);
  return /bh=([^;]+);/.exec(r.signatures.replace(/\r\n[ \t]/g, ''))![1]!.replace(/\s/g, '');
}

function req(body: Record<string, unknown>): SendRequest {
  const r = validateSendRequest(body, { maxRecipients: 50 });
  if (r instanceof Problems) throw new Error(JSON.stringify(r.details));
  return r;
}

const long = (n: number): string =>
  Array.from({ length: n }, (_, i) => `line ${i} \t with  runs\t\tof whitespace  ${i % 7 === 0 ? '   ' : ''}`).join(
    '\r\n',
  );

const HAND_WRITTEN: Array<[string, string, boolean?]> = [
  ['plain', 'From: a@example.com\r\nTo: b@example.org\r\nSubject: hi\r\n\r\nbody\r\n'],
  [
    'folded headers, tabs, runs of spaces',
    'From: a@example.com\r\nSubject:  a  \t folded\r\n\t subject  \r\nTO: b@example.org\r\nX-Other: not signed\r\n\r\nbody\r\n',
  ],
  // RFC 5322's obsolete syntax, which dkimpy refuses to parse at all: mailauth only.
  ['space before the colon', 'From: a@example.com\r\nSubject \t:  spaced\r\n\r\nbody\r\n', false],
  [
    'trailing whitespace and empty lines at the end of the body',
    'From: a@example.com\r\n\r\nline  \t \r\n  indented\r\n\r\n \t \r\n\r\n\r\n',
  ],
  ['no line break after the last line', 'From: a@example.com\r\n\r\nfirst\r\nlast line  '],
  ['a lone CR at the very end', 'From: a@example.com\r\n\r\nfirst\r\nlast\r'],
  ['bare LF line ends', 'From: a@example.com\nSubject: lf\n\tcontinued\n\nline one \nline two\n\n'],
  ['empty body', 'From: a@example.com\r\nSubject: nothing\r\n\r\n'],
  ['only empty lines in the body', 'From: a@example.com\r\n\r\n\r\n\r\n'],
  [
    'repeated fields',
    'From: a@example.com\r\nTo: one@example.org\r\nTo: two@example.org\r\nReceived: x\r\n\r\nbody\r\n',
  ],
  ['leading dots', 'From: a@example.com\r\n\r\n.starts with a dot\r\n..two\r\n.\r\nend\r\n'],
  ['8-bit bytes', 'From: =?UTF-8?Q?J=C3=B6rg?= <a@example.com>\r\nSubject: Grüße  aus   Köln\r\n\r\nGrüße \t\r\n'],
  ['a body of many 64 KiB slices', `From: a@example.com\r\n\r\n${long(20_000)}\r\n\r\n  \r\n`],
  ['empty lines where a slice ends', `From: a@example.com\r\n\r\n${'para \r\n \r\n\r\n'.repeat(9_000)}end\r\n`],
  ['a whole slice of empty lines before the text', `From: a@example.com\r\n\r\n${' \r\n'.repeat(30_000)}text\r\n`],
  ['one line longer than a slice', `From: a@example.com\r\n\r\n${'x  '.repeat(40_000)}\r\nafter \r\n`],
];

t.test('hand-written messages: both verifiers pass what is signed, and the body hash is mailauth’s', async (t) => {
  for (const [name, text, parsedByDkimpy = true] of HAND_WRITTEN) {
    const raw = Buffer.from(text, 'latin1');
    const signed = signMessage(raw, key);
    t.equal(
      signed.subarray(signed.length - raw.length).equals(raw),
      true,
      `${name}: the message follows the signature unchanged`,
    );
    const wire = await onTheWire(signed);
    t.equal(await mailauthResult(wire), 'pass', `${name}: mailauth verifies`);
    if (dkimpy && parsedByDkimpy) t.equal(dkimpyResult(wire), 'pass', `${name}: dkimpy verifies`);
    t.equal(
      bodyHash(raw, headerFields(raw).bodyAt),
      await mailauthBodyHash(raw),
      `${name}: the body hash is mailauth's`,
    );
  }
});

t.test('composed messages of every kind verify', async (t) => {
  const requests = [
    {
      from: 'Shop <shop@example.com>',
      to: 'a@example.org',
      subject: 'Your order',
      text_body: 'Thanks.\n.\nA line with a dot.',
    },
    {
      from: 'Jörg Ünicode <shop@example.com>',
      to: ['a@example.org', 'B <b@example.org>'],
      cc: 'c@example.org',
      reply_to: 'help@example.com',
      subject: `Grüße ${'long subject '.repeat(12)}`,
      text_body: `${'x'.repeat(500)}\n\ttabbed  \n`,
      html_body: '<p>hi  there</p>\n\n',
      headers: {
        'X-Campaign': 'spring',
        'List-Unsubscribe': '<https://example.com/u>',
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
      attachments: [
        {
          filename: 'a.bin',
          io: Buffer.alloc(100_000, 7).toString('base64'),
          content_type: 'application/octet-stream',
        },
      ],
    },
  ];
  for (const [i, body] of requests.entries()) {
    const raw = await composeMessage(req(body), `m${i}@example.com`, Date.UTC(2026, 0, 2));
    const signed = signMessage(raw, key);
    const wire = await onTheWire(signed);
    t.equal(await mailauthResult(wire), 'pass', `composed ${i}: mailauth verifies`);
    if (dkimpy) t.equal(dkimpyResult(wire), 'pass', `composed ${i}: dkimpy verifies`);
    const h = /h=([^;]+);/.exec(signed.toString('latin1', 0, 600).replace(/\r\n /g, ''))![1]!.split(':');
    for (const f of ['From', 'To', 'Subject', 'Date', 'Message-ID', 'MIME-Version', 'Content-Type'])
      t.ok(h.includes(f), `composed ${i}: ${f} is signed`);
    if (i === 1)
      for (const f of ['Cc', 'Reply-To', 'List-Unsubscribe', 'List-Unsubscribe-Post'])
        t.ok(h.includes(f), `composed ${i}: ${f} is signed`);
    t.notOk(h.includes('X-Campaign'), `composed ${i}: a field of the sender's own is not`);
  }
});

t.test('a change after signing fails verification, in the body or in a signed field', async (t) => {
  const raw = Buffer.from('From: a@example.com\r\nSubject: hi\r\n\r\nPay 10 EUR\r\n', 'latin1');
  const signed = signMessage(raw, key).toString('latin1');
  const verdict = async (text: string): Promise<string> => mailauthResult(await onTheWire(Buffer.from(text, 'latin1')));
  t.equal(await verdict(signed), 'pass', 'as signed');
  t.not(await verdict(signed.replace('10 EUR', '90 EUR')), 'pass', 'the body changed');
  t.not(await verdict(signed.replace('Subject: hi', 'Subject: ho')), 'pass', 'the subject changed');
  t.equal(
    await verdict(signed.replace('Pay 10 EUR\r\n', 'Pay   10 EUR  \r\n\r\n')),
    'pass',
    'whitespace that relaxed canonicalisation ignores',
  );
});

t.test('the signature field: the sender domain, the selector, the time, folded lines', async (t) => {
  const raw = Buffer.from('From: a@example.com\r\n\r\nx\r\n', 'latin1');
  const field = signMessage(raw, key, Date.UTC(2026, 10, 23, 12, 0, 0, 900))
    .toString('latin1')
    .split(/\r\n(?![ \t])/)[0]!;
  t.match(
    field,
    /^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=example\.com;/,
    'algorithm, canonicalisation and domain',
  );
  t.match(field, / s=sel1;/, 'selector');
  t.match(field, / t=1795435200;/, 'the signing time in whole seconds, not rounded up');
  t.ok(
    field.split('\r\n').every((l) => l.length <= 78),
    'no line longer than 78 characters',
  );
  t.throws(
    () =>
      signMessage(raw, {
        ...key,
        privateKey: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      }),
    /not rsa/,
    'a key that is not RSA is refused',
  );
});
