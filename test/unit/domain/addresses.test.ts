import t from 'tap';
import { parseAddrSpec, parseMailbox, splitAddressList } from '../../../src/domain/addresses.js';

t.test('valid addresses parse to a normalised addr-spec', async (t) => {
  const cases: Array<[string, string, string?]> = [
    ['alice@example.org', 'alice@example.org'],
    ['Alice@Example.ORG', 'Alice@example.org'],
    ['first.last+tag@sub.example.co.uk', 'first.last+tag@sub.example.co.uk'],
    ["o'brien@example.org", "o'brien@example.org"],
    ['"quoted local"@example.org', '"quoted local"@example.org'],
    ['user@bücher.de', 'user@xn--bcher-kva.de'],
    ['Alice <alice@example.org>', 'alice@example.org', 'Alice'],
    ['"Doe, Jane" <jane@example.org>', 'jane@example.org', 'Doe, Jane'],
    ['Zoë Ünicode <z@example.org>', 'z@example.org', 'Zoë Ünicode'],
  ];
  for (const [input, address, name] of cases) {
    const r = parseMailbox(input);
    t.ok(r.ok, input);
    if (r.ok) {
      t.equal(r.value.address, address, input);
      t.equal(r.value.name, name, `${input} name`);
    }
  }
});

t.test('invalid addresses are refused with a reason', async (t) => {
  const bad = [
    '',
    'plain',
    '@example.org',
    'a@',
    'a@b',
    'a..b@example.org',
    '.a@example.org',
    'a.@example.org',
    'a b@example.org',
    'a@exa mple.org',
    'a@-example.org',
    'a@example-.org',
    'a@example.123',
    'a@[127.0.0.1]',
    'a(comment)@example.org',
    'a@example.org\r\nBcc: b@example.org',
    'a\n@example.org',
    'a\0@example.org',
    `${'x'.repeat(65)}@example.org`,
    `a@${'x'.repeat(64)}.org`,
    'Name <a@example.org',
    'Na"me <a@example.org>',
    '"unbalanced <a@example.org>',
    'a@b@example.org',
    'a%b@example.org@relay.example',
  ];
  for (const input of bad) t.notOk(parseMailbox(input).ok, JSON.stringify(input));
  t.notOk(parseAddrSpec('a@[::1]').ok);
});

t.test('address lists split on commas outside quotes and angle brackets', async (t) => {
  t.same(splitAddressList('a@x.org, b@y.org'), ['a@x.org', 'b@y.org']);
  t.same(splitAddressList('"Doe, J" <j@x.org>,k@y.org'), ['"Doe, J" <j@x.org>', 'k@y.org']);
  t.same(splitAddressList(' a@x.org ,, '), ['a@x.org']);
  t.same(splitAddressList('"a\\"b, c" <x@y.org>'), ['"a\\"b, c" <x@y.org>']);
  // One address (no comma): the fast path gives what the full split gives.
  t.same(splitAddressList('  Alice <a@x.org>  '), ['Alice <a@x.org>']);
  t.same(splitAddressList('   '), []);
  t.same(splitAddressList(''), []);
});
