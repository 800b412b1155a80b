import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { describeConfig, loadConfig } from '../../../src/config/load.js';
import { configuredDefaultPool, spfSources } from '../../../src/config/settings.js';
import { tempDir } from '../../helpers/env.js';

function withFile(toml: string): string {
  const d = tempDir();
  t.teardown(d.remove);
  const p = join(d.path, 'c.toml');
  writeFileSync(p, toml);
  return p;
}

const load = (toml: string, env: NodeJS.ProcessEnv = {}) => loadConfig({ path: withFile(toml), env });

const TWO = `[outbound]
default_pool = "bulk"

[[outbound.pools]]
name = "transactional"
addresses = [ { ip = "192.0.2.10", ehlo = "MTA1.example.net." }, { ip = "2001:DB8::10", ehlo = "mta1.example.net" } ]

[[outbound.pools]]
name = "bulk"
addresses = [ { ip = "192.0.2.20", ehlo = "bulk.example.net", warmup_start = "2026-11-02" } ]
`;

t.test('[[outbound.pools]]: read as tables, addresses and names normalised, the default pool by name', async (t) => {
  const c = load(TWO);
  t.same(c.outbound.pools, [
    {
      name: 'transactional',
      addresses: [
        { ip: '192.0.2.10', ehlo: 'mta1.example.net' },
        { ip: '2001:db8::10', ehlo: 'mta1.example.net' },
      ],
    },
    { name: 'bulk', addresses: [{ ip: '192.0.2.20', ehlo: 'bulk.example.net', warmup_start: '2026-11-02' }] },
  ]);
  t.equal(configuredDefaultPool(c)?.name, 'bulk');
  t.same(
    spfSources(c),
    ['ip4:192.0.2.10', 'ip6:2001:db8::10', 'ip4:192.0.2.20'],
    'the SPF record lists every pool address',
  );
  t.same(
    spfSources({ outbound: { ...c.outbound, source_addresses: ['198.51.100.1'] } }),
    ['ip4:198.51.100.1'],
    'outbound.source_addresses overrides them',
  );
  t.same((describeConfig(c).outbound as Record<string, unknown>).pools, c.outbound.pools, 'config print shows them');
  const none = load('');
  t.same(none.outbound.pools, [], 'none by default');
  t.equal(configuredDefaultPool(none), null);
  t.same(spfSources(none), [], 'no pool, no source_addresses: the record says a:<hostname>');
  t.equal(
    configuredDefaultPool(load(TWO.replace('default_pool = "bulk"', '')))?.name,
    'transactional',
    'else the first',
  );
  const fromEnv = load('', {
    POSTHASTE_OUTBOUND_POOLS: JSON.stringify([{ name: 'p', addresses: [{ ip: '127.0.0.2', ehlo: 'a.test' }] }]),
  });
  t.equal(fromEnv.outbound.pools[0]?.addresses[0]?.ip, '127.0.0.2', 'from the environment as JSON');
});

t.test('[[outbound.pools]]: mistakes stop the load, naming the key, the pool and the address', async (t) => {
  const pool = (body: string) => `[[outbound.pools]]\n${body}\n`;
  const cases: Array<[string, RegExp]> = [
    [pool('name = "p"\naddresses = []'), /config: outbound\.pools: pool "p" has no address/],
    [pool('name = "p"'), /pool "p" has no address/],
    [pool('addresses = [ { ip = "127.0.0.2", ehlo = "a.test" } ]'), /pool 1: name null must be/],
    [pool('name = "p q"\naddresses = [ { ip = "127.0.0.2", ehlo = "a.test" } ]'), /pool 1: name "p q" must be/],
    [
      pool('name = "p"\naddresses = [ { ip = "127.0.0.2", ehlo = "a.test" } ]\ncolour = "red"'),
      /pool 1: unknown key "colour"/,
    ],
    [
      pool('name = "p"\naddresses = [ { ip = "127.0.0.2", ehlo = "a.test", weight = 2 } ]'),
      /pool "p", address 1: unknown key "weight"/,
    ],
    [
      pool(
        'name = "p"\naddresses = [ { ip = "127.0.0.2", ehlo = "a.test" }, { ip = "192.0.2.300", ehlo = "b.test" } ]',
      ),
      /pool "p", address 2: ip "192\.0\.2\.300" is not an IPv4 or IPv6 address/,
    ],
    [pool('name = "p"\naddresses = [ { ip = "127.0.0.2" } ]'), /pool "p", address 1: ehlo null is not a host name/],
    [pool('name = "p"\naddresses = [ { ip = "127.0.0.2", ehlo = "not a name" } ]'), /ehlo "not a name" is not a host/],
    [
      pool('name = "p"\naddresses = [ { ip = "127.0.0.2", ehlo = "a.test", warmup_start = "2026-02-30" } ]'),
      /address 1: warmup_start "2026-02-30" is not a day "YYYY-MM-DD"/,
    ],
    [
      pool('name = "p"\naddresses = [ { ip = "127.0.0.2", ehlo = "a.test" }, { ip = "127.0.0.2", ehlo = "b.test" } ]'),
      /pool "p": address 127\.0\.0\.2 is listed twice/,
    ],
    [
      pool('name = "p"\naddresses = [ { ip = "127.0.0.2", ehlo = "a.test" } ]') +
        pool('name = "p"\naddresses = [ { ip = "127.0.0.3", ehlo = "b.test" } ]'),
      /pool "p" is defined twice/,
    ],
    ['[outbound]\npools = "p"\n', /outbound\.pools: expected \[\[outbound\.pools\]\] tables/],
    [
      `[outbound]\ndefault_pool = "nope"\n${pool('name = "p"\naddresses = [ { ip = "127.0.0.2", ehlo = "a.test" } ]')}`,
      /config: outbound\.default_pool: "nope" is not a configured pool \(p\)/,
    ],
    [
      '[outbound]\ndefault_pool = "nope"\n',
      /outbound\.default_pool: "nope" names a pool, but no \[\[outbound\.pools\]\] is configured/,
    ],
  ];
  for (const [toml, error] of cases) t.throws(() => load(toml), error, toml);
});
