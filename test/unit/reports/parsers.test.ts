import { readdirSync } from 'node:fs';
import t from 'tap';
import { readReport } from '../../../src/reports/read.js';
import { fixture, fixturePath } from '../../helpers/fixtures.js';

// Each fixture is a report in the shape a real server sends, beside the reading it must give
// (kind "none": not a report, or malformed: no event may come of it). The corpus test reads
// hundreds of real ones; these pin down the shape of the result.
for (const dir of ['dsn', 'arf']) {
  for (const file of readdirSync(fixturePath(dir)).filter((f) => f.endsWith('.eml'))) {
    t.test(`${dir}/${file} reads as expected`, async (t) => {
      const expected = JSON.parse(fixture(`${dir}/${file.replace('.eml', '.json')}`).toString()) as unknown;
      t.same(readReport(fixture(`${dir}/${file}`)), expected);
    });
  }
}

t.test('hostile input reads as no report, not a crash, in bounded time', async (t) => {
  const nested = (depth: number) => {
    let body = 'x';
    for (let i = 0; i < depth; i++)
      body = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${body}\r\n--b${i}--`;
    return Buffer.from(`From: a@b.c\r\nSubject: s\r\nMIME-Version: 1.0\r\n${body}`);
  };
  const cases = [
    Buffer.alloc(0),
    Buffer.from('garbage'),
    nested(200),
    Buffer.from(`Subject: ${'x'.repeat(200_000)}\r\n\r\nbody`),
    Buffer.from(
      'Content-Type: multipart/report; report-type=delivery-status; boundary=q\r\n\r\n--q\r\nContent-Type: message/delivery-status\r\n\r\n' +
        'Final-Recipient: rfc822; a@b\r\n'.repeat(5000),
    ),
  ];
  for (const raw of cases) {
    const started = Date.now();
    const r = readReport(raw);
    t.equal(r.recipients.filter((x) => x.suppress).length, 0, 'nothing suppressed');
    t.not(r.kind, 'arf');
    t.ok(Date.now() - started < 5000, 'bounded time');
  }
});
