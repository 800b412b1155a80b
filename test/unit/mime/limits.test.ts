import type { Readable } from 'node:stream';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { MAX_MIME_PARTS, MIME_LIMITS, mimeLimitProblem, parserInput, tooComplex } from '../../../src/mime/limits.js';

t.test('the part count on raw bytes counts each Content-Type field once, across 1 MiB windows', async (t) => {
  const field = 'Content-Type: text/plain\r\n\r\nx\r\n';
  const message = (n: number, pad = 0) => Buffer.from('Subject: s\r\n' + 'y'.repeat(pad) + '\r\n' + field.repeat(n));
  t.notOk(tooComplex(message(MAX_MIME_PARTS)), `${MAX_MIME_PARTS} fields`);
  t.ok(tooComplex(message(MAX_MIME_PARTS + 1)), `${MAX_MIME_PARTS + 1} fields`);
  // Fields that straddle every window boundary: each counted once, whatever the offset.
  for (const shift of [0, 1, 5, 13, 14, 20]) {
    const pad = 1024 * 1024 - 14 - 'Subject: s\r\n'.length + shift;
    t.notOk(tooComplex(message(MAX_MIME_PARTS, pad)), `shifted by ${shift}: not over`);
    t.ok(tooComplex(message(MAX_MIME_PARTS + 1, pad)), `shifted by ${shift}: over`);
  }
  t.notOk(tooComplex(Buffer.from('X-Note: content-type: a\r\n'.repeat(2000))), 'only at the start of a line');
});

t.test("the parser's limit errors are named for the sender; other errors are not", async (t) => {
  const big = Buffer.from(`X-Big: ${'a'.repeat(MIME_LIMITS.maxHeadSize + 10)}\r\n\r\nx`);
  const err = await simpleParser(parserInput(big), { ...MIME_LIMITS } as Parameters<typeof simpleParser>[1]).then(
    () => null,
    (e: unknown) => e,
  );
  t.equal(mimeLimitProblem(err), 'a header section larger than 1 MiB');
  const parts = Buffer.from(
    `Content-Type: multipart/mixed; boundary=q\r\n\r\n${'--q\r\n\r\nx\r\n'.repeat(MAX_MIME_PARTS + 5)}--q--\r\n`,
  );
  const err2 = await simpleParser(parserInput(parts), { ...MIME_LIMITS } as Parameters<typeof simpleParser>[1]).then(
    () => null,
    (e: unknown) => e,
  );
  t.equal(mimeLimitProblem(err2), 'more than 1000 MIME parts');
  t.equal(mimeLimitProblem(new Error('other')), undefined);
});

t.test('a large message reaches the parser in slices of the same bytes', async (t) => {
  const small = Buffer.from('Subject: s\r\n\r\nbody');
  t.equal(parserInput(small), small, 'small: as it is');
  const large = Buffer.alloc(200_000, 0x61);
  const input = parserInput(large) as Readable;
  const got: Buffer[] = [];
  for await (const c of input) got.push(c as Buffer);
  t.same(
    got.map((c) => c.length),
    [65536, 65536, 65536, 3392],
  );
  t.ok(Buffer.concat(got).equals(large));
  t.equal(got[0]!.buffer, large.buffer, 'views of the message, not copies');
});
