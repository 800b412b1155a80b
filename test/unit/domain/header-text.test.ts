import fc from 'fast-check';
import t from 'tap';
import { parseMailbox } from '../../../src/domain/addresses.js';
import { Problems } from '../../../src/domain/errors.js';
import { hasControl, MAX_LINE_LENGTH } from '../../../src/domain/header-text.js';
import {
  HEADER_VALUE_MAX_LENGTH,
  isStrictBase64,
  type SendRequest,
  validateSendRequest,
} from '../../../src/domain/send-request.js';
import { composeMessage, LineMeter } from '../../../src/mime/compose.js';

const base = { from: 'a@example.com', to: 'b@example.org', subject: 'Hello', text_body: 'Hi' };
const problems = (body: Record<string, unknown>) => {
  const r = validateSendRequest({ ...base, ...body }, { maxRecipients: 50 });
  return r instanceof Problems ? r.details : {};
};

/** The CPU this process spent since `started` (ms): unlike the wall clock, not stretched by a machine busy with other work. */
const cpuMs = (started: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(started);
  return Math.round((u.user + u.system) / 1000);
};

t.test('every control character but tab is refused in header text; tab and ordinary text are not', async (t) => {
  const controls = [...Array.from({ length: 0x20 }, (_, i) => i).filter((c) => c !== 0x09), 0x7f, 0x80, 0x85, 0x9f];
  for (const c of controls) {
    const ch = String.fromCharCode(c);
    t.ok(hasControl(`a${ch}b`), `U+${c.toString(16).padStart(4, '0')} is a control`);
    t.ok(problems({ subject: `a${ch}b` }).subject, `subject with U+${c.toString(16)}`);
    t.ok(problems({ headers: { 'X-Tag': `a${ch}b` } })['headers.X-Tag'], `header value with U+${c.toString(16)}`);
    t.notOk(parseMailbox(`"A${ch}B" <a@example.org>`).ok, `display name with U+${c.toString(16)}`);
  }
  // (Named by code points: a raw U+2028 in a test name would break the TAP stream.)
  const label = (s: string) => [...s].map((c) => `U+${c.codePointAt(0)!.toString(16).padStart(4, '0')}`).join(' ');
  for (const ok of ['a\tb', 'Zoë ☃ 日本語', 'a\u00a0b', 'a\u2028b']) {
    t.notOk(hasControl(ok), label(ok));
    t.same(
      problems({ subject: ok, headers: { 'X-Tag': ok }, to: `"${ok}" <b@example.org>` }),
      {},
      `${label(ok)} is accepted`,
    );
  }
  t.match(problems({ subject: 'a\x0bb' }).subject, [/control character/]);
  t.ok(
    problems({ attachments: [{ filename: 'a\x85.txt', io: 'AA==', content_type: 'text/plain' }] })[
      'attachments[0].filename'
    ],
    'a file name with NEL',
  );
});

t.test('header values are bounded in length, and a run without whitespace must fit a 998-character line', async (t) => {
  t.match(problems({ headers: { 'X-Big': 'a'.repeat(HEADER_VALUE_MAX_LENGTH + 1) } })['headers.X-Big'], [
    /at most 8192 characters/,
  ]);
  t.match(problems({ headers: { 'X-Word': 'a'.repeat(995) } })['headers.X-Word'], [/998/]);
  t.same(problems({ headers: { 'X-Words': 'word '.repeat(1600).trim() } }), {}, '8,000 characters with spaces fold');
  t.same(problems({ headers: { 'X-Word': 'a'.repeat(990) } }), {}, 'a 990-character word fits its line');
  t.match(problems({ subject: 'a'.repeat(995) }).subject, [/998/], 'a subject of one 995-character word');
  t.match(
    Object.values(problems({ headers: { ['X-' + 'n'.repeat(99)]: 'v' } }))[0],
    [/at most 100 characters/],
    'a header name of 101 characters',
  );
  t.notOk(parseMailbox(`${'n '.repeat(150)} <a@example.org>`).ok, 'a display name over 256 characters');
  t.ok(parseMailbox(`"${'n'.repeat(250)}" <a@example.org>`).ok, 'a 250-character display name is fine');
});

t.test('longestHeaderLine is an upper bound on what the composer writes, whatever the value', async (_t) => {
  const text = fc
    .array(fc.oneof(fc.constantFrom(' ', '\t', 'é', '日', 'a'), fc.stringMatching(/^[!-~]{1,300}$/)), { maxLength: 40 })
    .map((a) => a.join(''));
  await fc.assert(
    fc.asyncProperty(text, async (value) => {
      if (value.trim() === '') return true;
      const r = validateSendRequest(
        {
          ...base,
          headers: { 'X-Value': value },
          subject: `s ${value}`.slice(0, 998),
          to: `"${value.slice(0, 250).replace(/["\\]/g, '')}" <b@example.org>`,
        },
        { maxRecipients: 50 },
      );
      if (r instanceof Problems) return true; // refused: nothing is composed
      const raw = await composeMessage(r, 'id@example.com', 0);
      const meter = new LineMeter();
      meter.feed(raw);
      return meter.longest <= MAX_LINE_LENGTH;
    }),
    { numRuns: 150 },
  );
});

t.test(
  'a long header value is folded at whitespace into lines of at most 998, and unfolds to the value given',
  async (t) => {
    const value = Array.from({ length: 900 }, (_, i) => `w${i}`).join(' ') + ' ' + 'x'.repeat(900);
    const r = validateSendRequest({ ...base, headers: { 'X-Long': value } }, { maxRecipients: 50 }) as SendRequest;
    t.notOk(r instanceof Problems);
    const raw = (await composeMessage(r, 'id@example.com', 0)).toString();
    const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
    for (const line of head.split('\r\n')) t.ok(line.length <= MAX_LINE_LENGTH, `line of ${line.length}`);
    const field = /^X-Long: (.*(?:\r\n[ \t].*)*)/m.exec(head)![1]!;
    t.equal(field.replace(/\r\n(?=[ \t])/g, ''), value, 'unfolding gives the value back (RFC 5322 2.2.3)');
  },
);

t.test('the composer refuses to produce a line over 998, whatever the request', async (t) => {
  const meter = new LineMeter();
  for (const piece of ['abc\r', '\ndef', 'x'.repeat(2000), '\r\n', 'y\r\n']) meter.feed(Buffer.from(piece));
  t.equal(meter.longest, 2003, 'a line split across chunks is measured whole, CRLF excluded');
  const lf = new LineMeter();
  lf.feed(Buffer.from('ab\ncd\r'));
  lf.feed(Buffer.from('\n'));
  t.equal(lf.longest, 2, 'CR at the end of one chunk and LF at the start of the next end a line');
});

t.test('strict Base64 is checked in linear time, also for attachments of many megabytes', async (t) => {
  const old = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  fc.assert(
    fc.property(
      fc.string({ unit: fc.constantFrom('A', 'b', '0', '+', '/', '=', ' ', '\n', '-', 'é'), maxLength: 24 }),
      (s) => isStrictBase64(s) === old.test(s),
    ),
    { numRuns: 5000 },
  );
  const big = Buffer.alloc(30 * 1024 * 1024, 0xa5).toString('base64');
  const started = process.cpuUsage();
  t.ok(isStrictBase64(big), '40 MB of Base64');
  t.notOk(isStrictBase64(big.slice(0, -4) + 'AA!A'), 'one bad character at the end');
  t.notOk(isStrictBase64(big + 'A'), 'length not a multiple of four');
  const ms = cpuMs(started);
  t.ok(ms < 2000, `checked in ${ms} ms of CPU`);
  t.throws(() => old.test(big), RangeError, 'the pattern it replaces overflowed the stack on this input');
});

t.test('a recipient list past the limit gets one problem, and no request gets more than 100 in details', async (t) => {
  const many = validateSendRequest(
    { ...base, to: Array.from({ length: 1_000_000 }, () => 'x') },
    { maxRecipients: 50 },
  ) as Problems;
  t.same(many.details.to, ['has 1000000 addresses; at most 50 recipients are allowed in to, cc and bcc together']);
  const headers = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`X-${i}`, 'a\nb']));
  const p = validateSendRequest({ ...base, headers }, { maxRecipients: 50 }) as Problems;
  t.equal(p.count, 5000, 'every problem counted');
  t.equal(Object.values(p.details).flat().length, Problems.MAX_PROBLEMS, 'the first 100 kept');
  t.equal(p.omitted, 4900);
});

t.test('mailbox parsing takes linear time on hostile input (no backtracking on whitespace)', async (t) => {
  for (const input of [
    'a' + ' '.repeat(1_000_000) + 'b',
    `"${'a'.repeat(5_000_000)}" <a@b.org>`,
    '<'.repeat(100_000) + '>',
    'a\t '.repeat(300_000),
  ]) {
    const started = process.cpuUsage();
    t.notOk(parseMailbox(input).ok);
    const ms = cpuMs(started);
    t.ok(ms < 200, `${ms} ms of CPU`);
  }
});
