import t from 'tap';
import { attachmentDisposition, inertHtml } from '../../../src/dashboard/untrusted.js';

t.test('inertHtml: nested frames and plugins become unknown elements, the rest stays', async (t) => {
  const cases: Array<[string, string]> = [
    ['<iframe src="https://t.example/x"></iframe>', '<x-inert-iframe src="https://t.example/x"></x-inert-iframe>'],
    ['<IFRAME\nsrc=x>', '<x-inert-IFRAME\nsrc=x>'],
    ['<iframe/src=x>', '<x-inert-iframe/src=x>'],
    ['<iframe>', '<x-inert-iframe>'],
    ['<iframe', '<x-inert-iframe'],
    ['<frameset><frame src=x></frameset>', '<x-inert-frameset><x-inert-frame src=x></x-inert-frameset>'],
    [
      '<object data=x></object><embed src=x><portal src=x><fencedframe src=x>',
      '<x-inert-object data=x></x-inert-object><x-inert-embed src=x><x-inert-portal src=x><x-inert-fencedframe src=x>',
    ],
    [
      '<svg><foreignObject><iframe src=x></iframe></foreignObject></svg>',
      '<svg><foreignObject><x-inert-iframe src=x></x-inert-iframe></foreignObject></svg>',
    ],
  ];
  for (const [input, out] of cases) t.equal(inertHtml(input), out, input);
  const kept =
    '<p>An <b>iframe</b> is <a href="https://example.com/iframe">a frame</a>; < iframe is text; <iframes> and <objects> are other elements.</p><img src="cid:logo">';
  t.equal(inertHtml(kept), kept, 'text, other elements and attributes are untouched');
});

t.test('attachmentDisposition: always an attachment, a safe ASCII name and the real one encoded', async (t) => {
  t.equal(attachmentDisposition('report.pdf'), `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
  t.equal(
    attachmentDisposition('Übersicht 2026.pdf'),
    `attachment; filename="_bersicht_2026.pdf"; filename*=UTF-8''%C3%9Cbersicht%202026.pdf`,
  );
  const hostile = attachmentDisposition('a"; filename=evil.html\\x.txt');
  t.match(
    hostile,
    /^attachment; filename="a___filename_evil\.html_x\.txt"; filename\*=UTF-8''[A-Za-z0-9%._~!-]+$/,
    'no quote, semicolon or backslash survives',
  );
  t.match(attachmentDisposition(''), /^attachment; filename="attachment"/);
  t.match(attachmentDisposition("it's (1).txt"), /filename\*=UTF-8''it%27s%20%281%29\.txt$/);
});
