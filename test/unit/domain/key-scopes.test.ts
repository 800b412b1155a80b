import t from 'tap';
import {
  addressAllowed,
  cidrsWithin,
  escalation,
  fromDomainAllowed,
  fullGrant,
  parseCidrs,
  parseGrant,
  parseScopes,
} from '../../../src/domain/key-scopes.js';

// An API key's scopes and restrictions as pure rules (domain/key-scopes.ts), from tables.

t.test('scopes: presets, names, and no default', async (t) => {
  t.same(parseScopes(['full']), fullGrant().scopes);
  t.same(parseScopes(['send']), ['send']);
  t.same(parseScopes(['keys:write', 'send', 'send']), ['send', 'keys:write'], 'in order, once each');
  t.match(parseScopes([]), /choose the key's scopes: full, send/);
  t.match(parseScopes(['send', 'admin']), /"admin" is not a scope/);
});

t.test('client addresses against allowed_cidrs', async (t) => {
  const table: Array<[string[] | null, string, boolean]> = [
    [null, '203.0.113.5', true],
    [['203.0.113.0/24'], '203.0.113.5', true],
    [['203.0.113.0/24'], '::ffff:203.0.113.5', true],
    [['203.0.113.0/24'], '203.0.114.5', false],
    [['2001:db8::/32'], '2001:db8:1::7', true],
    [['2001:db8::/32'], '2001:db9::7', false],
    [['127.0.0.1/32'], 'not an address', false],
  ];
  for (const [cidrs, address, allowed] of table)
    t.equal(addressAllowed(cidrs, address), allowed, `${address} in ${cidrs?.join(',') ?? 'anything'}`);
  t.same(parseCidrs(['10.1.2.3', '2001:DB8::/32']), ['10.1.2.3/32', '2001:db8::/32']);
  for (const bad of ['10.0.0.0/33', '10.0.0', 'example.com', '10.0.0.0/8/8', '::/129'])
    t.type(parseCidrs([bad]), 'string', bad);
  t.ok(cidrsWithin(['10.1.0.0/16'], ['10.0.0.0/8']));
  t.notOk(cidrsWithin(['0.0.0.0/0'], ['10.0.0.0/8']));
  t.notOk(cidrsWithin(null, ['10.0.0.0/8']), 'no restriction is wider than any');
  t.ok(cidrsWithin(null, null));
});

t.test('from_domains: case-insensitive, IDNs in their ASCII form', async (t) => {
  const g = parseGrant({ scopes: ['send'], from_domains: ['Example.COM', 'bücher.example'] });
  t.ok('grant' in g);
  if (!('grant' in g)) return;
  t.same(g.grant.from_domains, ['example.com', 'xn--bcher-kva.example']);
  t.ok(fromDomainAllowed(g.grant, 'EXAMPLE.com'));
  t.notOk(fromDomainAllowed(g.grant, 'other.example'));
  t.match(parseGrant({ scopes: ['send'], from_domains: [] }), { problems: { from_domains: /at least one/ } });
});

t.test('escalation: a key gives no more than it has', async (t) => {
  const creator = {
    scopes: ['send' as const, 'keys:write' as const],
    from_domains: ['a.example'],
    allowed_cidrs: null,
  };
  t.same(escalation(creator, { scopes: ['send'], from_domains: ['a.example'], allowed_cidrs: ['10.0.0.0/8'] }), {});
  t.match(escalation(creator, { ...creator, scopes: ['send', 'emails:read'] }), { scopes: /emails:read/ });
  t.match(escalation(creator, { ...creator, from_domains: null }), { from_domains: /a\.example/ });
  t.match(escalation(creator, { ...creator, from_domains: ['b.example'] }), { from_domains: String });
  const fenced = { ...fullGrant(), allowed_cidrs: ['10.0.0.0/8'] };
  t.match(escalation(fenced, { ...fullGrant(), allowed_cidrs: null }), { allowed_cidrs: /10\.0\.0\.0\/8/ });
});
