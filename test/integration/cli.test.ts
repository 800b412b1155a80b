import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cleanEnv } from '../../support/daemon-process.js';
import { TestDnsServer, zoneStrings } from '../../support/dns-server.js';
import { json, runCli } from '../helpers/cli.js';
import { tempDir, versionsAfter, writeTestConfig } from '../helpers/env.js';

const dir = tempDir();
// Each CLI command is a process of its own (1-3 s on a loaded machine): more than the default 120 s in all.
t.setTimeout(300_000);
t.teardown(dir.remove);
const dns = await new TestDnsServer().start();
t.teardown(() => dns.stop());
const config = writeTestConfig(dir.path, '', dns.server);
const cli = (...args: string[]) => runCli(['--config', config, ...args]);

interface DomainJson {
  name: string;
  customer: string;
  verified: boolean;
  receiving: boolean;
  dkim: { signing: string; next: string | null; previous: unknown };
  dns_records: Array<{ type: string; name: string; value: string; text?: string; purpose: string }>;
}

t.test('customers add|list|show', async (t) => {
  const add = await cli('customers', 'add', 'acme', '--json');
  t.equal(add.code, 0, add.stderr);
  t.match(json(add), { name: 'acme', id: Number });
  const list = json<Array<{ name: string }>>(await cli('customers', 'list', '--json'));
  t.same(
    list.map((c) => c.name),
    ['default', 'acme'],
    'the default customer exists after the first start',
  );
  t.match(json(await cli('customers', 'show', 'acme', '--json')), { name: 'acme', keys: 0, domains: 0, messages: 0 });
  const dup = await cli('customers', 'add', 'acme');
  t.not(dup.code, 0);
  t.match(dup.stderr, /already exists/);
  t.equal(dup.stderr.trim().split('\n').length, 1, 'one line on stderr');
  const human = await cli('customers', 'list');
  t.match(human.stdout, /NAME/);
});

t.test('keys create|list|revoke with --json shapes', async (t) => {
  const created = await cli('keys', 'create', '--customer', 'acme', '--production', '--full', '--name', 'ci', '--json');
  t.equal(created.code, 0, created.stderr);
  const k = json<{ id: string; key: string; kind: string; customer: string; name: string; created_at: string }>(
    created,
  );
  t.same(Object.keys(k).sort(), [
    'allowed_cidrs',
    'created_at',
    'customer',
    'from_domains',
    'id',
    'key',
    'kind',
    'name',
    'scopes',
  ]);
  t.match(k, {
    kind: 'production',
    customer: 'acme',
    name: 'ci',
    scopes: 'send,emails:read,inbound:read,webhooks:write,suppressions:write,domains:write,keys:write',
  });
  t.match(k.key, /^ph_live_[0-9A-Za-z]{32,}$/);
  const sb = json<{ key: string; kind: string }>(await cli('keys', 'create', '--sandbox', '--send-only', '--json'));
  t.match(sb, { kind: 'sandbox', key: /^ph_test_/, scopes: 'send' });
  const both = await cli('keys', 'create', '--sandbox', '--production', '--full');
  t.not(both.code, 0);
  // No silent default: a key is made only with its scopes chosen, and the error names the choices.
  const unchosen = await cli('keys', 'create', '--production');
  t.not(unchosen.code, 0, 'no scope chosen: refused');
  t.match(unchosen.stderr, /--full.*--send-only.*--scopes/);
  const twice = await cli('keys', 'create', '--production', '--full', '--send-only');
  t.not(twice.code, 0, 'two choices: refused');
  const bad = await cli('keys', 'create', '--production', '--scopes', 'send,everything');
  t.not(bad.code, 0);
  t.match(bad.stderr, /"everything" is not a scope/);
  const badCidr = await cli('keys', 'create', '--production', '--send-only', '--allowed-cidrs', '10.0.0.0/33');
  t.not(badCidr.code, 0);
  t.match(badCidr.stderr, /allowed-cidrs/);
  const narrow = json<{ id: string }>(
    await cli(
      'keys',
      'create',
      '--production',
      '--scopes',
      'emails:read,send',
      '--from-domains',
      'Example.COM,b.example',
      '--allowed-cidrs',
      '192.0.2.0/24,2001:db8::1',
      '--json',
    ),
  );
  const list = await cli('keys', 'list', '--json');
  t.notMatch(list.stdout, k.key, 'list never shows a key');
  t.ok(json<Array<{ id: string }>>(list).some((x) => x.id === k.id));
  t.match(
    json<Array<{ id: string }>>(list).find((x) => x.id === narrow.id),
    {
      scopes: 'send,emails:read',
      from_domains: 'example.com,b.example',
      allowed_cidrs: '192.0.2.0/24,2001:db8::1/128',
      last_used_at: null,
    },
    'list shows scopes, restrictions and last use',
  );
  t.match((await cli('keys', 'list')).stdout, /SCOPES.*LAST_USED_AT/i, 'and so does its table');
  // Only a hash is stored: the key text is nowhere in the database file.
  const dbBytes = readFileSync(join(dir.path, 'data', 'posthaste.db'));
  const wal = (() => {
    try {
      return readFileSync(join(dir.path, 'data', 'posthaste.db-wal'));
    } catch {
      return Buffer.alloc(0);
    }
  })();
  t.notOk(dbBytes.includes(k.key) || wal.includes(k.key), 'the key is not stored');
  const revoked = await cli('keys', 'revoke', k.id, '--json');
  t.match(json(revoked), { id: k.id, revoked: true });
  t.match(
    json<Array<{ id: string; revoked_at: string | null }>>(await cli('keys', 'list', '--json')).find(
      (x) => x.id === k.id,
    ),
    { revoked_at: String },
  );
  const unknown = await cli('keys', 'revoke', 'key_nope');
  t.not(unknown.code, 0);
});

t.test(
  'domains add prints the DNS records in the documented form; verify checks them through dns.servers',
  async (t) => {
    const added = await cli('domains', 'add', 'Mail.Example.COM', '--customer', 'acme', '--json');
    t.equal(added.code, 0, added.stderr);
    const d = json<DomainJson>(added);
    t.same(Object.keys(d).sort(), ['customer', 'dkim', 'dns_records', 'name', 'receiving', 'return_path', 'verified']);
    t.same(d.dkim, { signing: 'posthaste', next: null, previous: null });
    t.match(d, { name: 'mail.example.com', customer: 'acme', verified: false, receiving: false });
    t.same(
      d.dns_records.map((r) => r.purpose),
      ['verification', 'dkim', 'spf', 'return_path', 'dmarc'],
    );
    for (const r of d.dns_records)
      t.same(
        Object.keys(r).sort(),
        r.type === 'TXT'
          ? ['name', 'purpose', 'text', 'type', 'value']
          : r.type === 'CNAME'
            ? ['instead', 'name', 'purpose', 'type', 'value']
            : ['name', 'purpose', 'type', 'value'],
      );
    const dkim = d.dns_records.find((r) => r.purpose === 'dkim')!;
    t.equal(dkim.name, 'posthaste._domainkey.mail.example.com');
    // A zone file's form: quoted strings of at most 255 characters, which join to the text.
    const strings = zoneStrings(dkim.value);
    t.ok(
      strings.length === 2 && strings.every((x) => x.length <= 255),
      'the DKIM record in two strings of at most 255',
    );
    t.equal(strings.join(''), dkim.text);
    t.equal(
      d.dns_records.find((r) => r.purpose === 'verification')!.value,
      `"${d.dns_records.find((r) => r.purpose === 'verification')!.text}"`,
      'a short one in one string',
    );
    const pub = /p=([A-Za-z0-9+/=]+)$/.exec(dkim.text!)![1]!;
    const { createPublicKey } = await import('node:crypto');
    const key = createPublicKey({ key: Buffer.from(pub, 'base64'), format: 'der', type: 'spki' });
    t.equal(key.asymmetricKeyDetails?.modulusLength, 2048, 'a 2048-bit RSA DKIM key');
    t.match(
      d.dns_records.find((r) => r.purpose === 'return_path'),
      { type: 'CNAME', name: 'bounces.mail.example.com', value: 'bounces.test.posthaste.' },
      "the domain's own return path: a CNAME to the server's return path domain",
    );

    // Nothing published yet: not verified, non-zero exit.
    const before = await cli('domains', 'verify', 'mail.example.com', '--json');
    t.equal(before.code, 1);
    t.equal(json<{ verified: boolean }>(before).verified, false);
    t.ok(
      dns.queries.some((q) => q.name === '_posthaste.mail.example.com'),
      'asked the loopback DNS server',
    );

    // Publish the records on the loopback DNS server, string by string as a zone file holding their values serves them.
    for (const r of d.dns_records)
      if (r.type === 'TXT')
        dns.set(r.name, { TXT: [...(dns.zone.get(r.name.toLowerCase())?.TXT ?? []), zoneStrings(r.value)] });
    const ok = await cli('domains', 'verify', 'mail.example.com', '--json');
    t.equal(ok.code, 0, ok.stderr);
    t.match(json(ok), { name: 'mail.example.com', verified: true, forced: false });
    t.equal(json<DomainJson>(await cli('domains', 'show', 'mail.example.com', '--json')).verified, true);

    // The records disappear: verify again marks it unverified.
    dns.zone.delete('_posthaste.mail.example.com');
    const gone = await cli('domains', 'verify', 'mail.example.com', '--json');
    t.equal(gone.code, 1);
    t.equal(json<DomainJson>(await cli('domains', 'show', 'mail.example.com', '--json')).verified, false);

    const forced = await cli('domains', 'verify', 'mail.example.com', '--force', '--json');
    t.match(json(forced), { verified: true, forced: true });

    const recv = json<DomainJson>(await cli('domains', 'add', 'in.example.com', '--receiving', '--json'));
    t.match(recv, { receiving: true, customer: 'default' });
    t.same(
      recv.dns_records.filter((r) => r.type === 'MX'),
      [{ type: 'MX', name: 'in.example.com', value: '10 mx.test.posthaste', purpose: 'inbound' }],
      "a receiving domain's own MX, at server.hostname",
    );
    t.match(
      (await cli('domains', 'show', 'in.example.com')).stdout,
      /\[inbound\] in\.example\.com MX 10 mx\.test\.posthaste\n/,
    );
    t.notOk(
      d.dns_records.some((r) => r.purpose === 'inbound'),
      'none for a domain that only sends',
    );
    const list = json<DomainJson[]>(await cli('domains', 'list', '--json'));
    t.same(
      list.map((x) => x.name),
      ['in.example.com', 'mail.example.com'],
    );
    t.same(
      json<DomainJson[]>(await cli('domains', 'list', '--customer', 'acme', '--json')).map((x) => x.name),
      ['mail.example.com'],
    );
    t.match(json(await cli('domains', 'remove', 'in.example.com', '--json')), { removed: true });
    t.not((await cli('domains', 'show', 'in.example.com')).code, 0);
    t.not((await cli('domains', 'add', 'not a domain')).code, 0);
  },
);

t.test('domains add ends with the verify command as it can be pasted: with the --config it was run with', async (t) => {
  const added = await cli('domains', 'add', 'paste.example.com');
  t.equal(added.code, 0, added.stderr);
  const line = /^Then run: (.+)$/m.exec(added.stdout)?.[1];
  t.match(
    line,
    new RegExp(` --config ${config.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} domains verify paste\\.example\\.com$`),
  );
  // Pasted into a shell, it reaches the same store: the domain is found (not verified yet: exit 1, not 2).
  const pasted = await new Promise<{ code: number | null; out: string }>((resolve) => {
    execFile('/bin/sh', ['-c', `${line} --json`], { env: cleanEnv() }, (err, stdout) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: stdout }),
    );
  });
  t.equal(pasted.code, 1, 'ran, and said the records are not there yet');
  t.match(JSON.parse(pasted.out), { name: 'paste.example.com', verified: false });
  t.match(json(await cli('domains', 'remove', 'paste.example.com', '--json')), { removed: true });
});

t.test('db migrate and config print', async (t) => {
  const m = json<{ versions: number[] }>(await cli('db', 'migrate', '--json'));
  t.same(m.versions, versionsAfter(0), 'every migration, in order');
  const printed = json<{ server: { hostname: string }; api: { tls: { cert: string } } }>(
    await cli('config', 'print', '--json'),
  );
  t.equal(printed.server.hostname, 'mx.test.posthaste');
  t.equal(printed.api.tls.cert, '');
  const toml = await cli('config', 'print');
  t.match(toml.stdout, /\[server\]/);
});

t.test('a bad config key stops every command with a message naming it', async (t) => {
  const d2 = tempDir();
  t.teardown(d2.remove);
  const bad = writeTestConfig(d2.path, '[outbound]\nprot = 25\n');
  for (const args of [['serve'], ['keys', 'list'], ['config', 'print']]) {
    const r = await runCli(['--config', bad, ...args]);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, /outbound\.prot: unknown key/);
  }
  const env = await runCli(['--config', config, 'config', 'print'], { POSTHASTE_OUTBOUND_PORT: 'many' });
  t.equal(env.code, 2);
  t.match(env.stderr, /outbound\.port/);
  const override = json<{ outbound: { port: number } }>(
    await runCli(['--config', config, 'config', 'print', '--json'], { POSTHASTE_OUTBOUND_PORT: '2526' }),
  );
  t.equal(override.outbound.port, 2526);
});
