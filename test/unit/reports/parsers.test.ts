import t from 'tap';
import { readdirSync } from 'node:fs';
import { parseDsn } from '../../../src/reports/dsn.js';
import { parseArf } from '../../../src/reports/arf.js';
import { fixture, fixturePath } from '../../helpers/fixtures.js';

// Each fixture is a report in the shape a real server sends, beside the JSON the parser must give
// (null: not a report of that kind, or malformed: no event may come of it).
for (const [kind, parse] of [['dsn', parseDsn], ['arf', parseArf]] as const) {
  for (const file of readdirSync(fixturePath(kind)).filter((f) => f.endsWith('.eml'))) {
    t.test(`${kind}/${file} parses as expected`, async (t) => {
      const expected = JSON.parse(fixture(`${kind}/${file.replace('.eml', '.json')}`).toString()) as unknown;
      t.same(await parse(fixture(`${kind}/${file}`)), expected);
    });
  }
}

t.test('hostile input gives null, not a crash, in bounded time', async (t) => {
  const nested = (depth: number) => {
    let body = 'x';
    for (let i = 0; i < depth; i++) body = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${body}\r\n--b${i}--`;
    return Buffer.from(`From: a@b.c\r\nSubject: s\r\nMIME-Version: 1.0\r\n${body}`);
  };
  const cases = [Buffer.alloc(0), Buffer.from('garbage'), nested(200), Buffer.from(`Subject: ${'x'.repeat(200_000)}\r\n\r\nbody`), Buffer.from('Content-Type: multipart/report; report-type=delivery-status; boundary=q\r\n\r\n--q\r\nContent-Type: message/delivery-status\r\n\r\n' + 'Final-Recipient: rfc822; a@b\r\n'.repeat(5000))];
  for (const raw of cases) {
    const started = Date.now();
    t.equal(await parseDsn(raw), null);
    t.equal(await parseArf(raw), null);
    t.ok(Date.now() - started < 5000, 'bounded time');
  }
});
