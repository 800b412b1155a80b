import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'smol-toml';
import t from 'tap';
import { EXAMPLE_UNSET, renderExample } from '../../../src/config/example.js';
import type { Schema } from '../../../src/config/keys.js';
import {
  configPath,
  configWarnings,
  describeConfig,
  envName,
  isPlaceholderName,
  loadConfig,
  parseDuration,
} from '../../../src/config/load.js';
import { schema } from '../../../src/config/schema.js';
import { destinationLimits } from '../../../src/config/settings.js';
import { tempDir } from '../../helpers/env.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

function withFile(toml: string): string {
  const d = tempDir();
  t.teardown(d.remove);
  const p = join(d.path, 'c.toml');
  writeFileSync(p, toml);
  return p;
}

t.test('defaults apply when the file sets nothing', async (t) => {
  const c = loadConfig({ path: withFile(''), env: {} });
  t.equal(c.api.listen, '127.0.0.1:8025');
  t.equal(c.smtp.listen, '0.0.0.0:25');
  t.equal(c.outbound.port, 25);
  t.same(c.dns.servers, []);
  t.equal(c.webhooks.allow_private_targets, false);
  t.equal(c.limits.max_message_bytes, 25 * 1024 * 1024);
  t.equal(c.limits.idempotency_ttl, 24 * 3600 * 1000);
});

t.test('the keys and forms the documentation fixes parse as written there', async (t) => {
  const c = loadConfig({
    path: withFile(`[server]
hostname = "mx.example.net"
data_dir = "/var/lib/posthaste"
[api]
listen = "127.0.0.1:8025"
[smtp]
listen = "0.0.0.0:25"
return_path_domain = "bounces.example.net"
feedback_address = "fbl@example.net"
[outbound]
port = 25
[dns]
servers = ["127.0.0.1:5353"]
[webhooks]
allow_private_targets = false
`),
    env: {},
  });
  t.equal(c.server.hostname, 'mx.example.net');
  t.equal(c.smtp.return_path_domain, 'bounces.example.net');
  t.same(c.dns.servers, ['127.0.0.1:5353']);
});

t.test('environment overrides beat the file, with typed parsing', async (t) => {
  const c = loadConfig({
    path: withFile('[outbound]\nport = 25\n'),
    env: {
      POSTHASTE_OUTBOUND_PORT: '2526',
      POSTHASTE_DNS_SERVERS: '127.0.0.1:53,127.0.0.2',
      POSTHASTE_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
      POSTHASTE_API_TLS_CERT: '/x.pem',
    },
  });
  t.equal(c.outbound.port, 2526);
  t.same(c.dns.servers, ['127.0.0.1:53', '127.0.0.2']);
  t.equal(c.webhooks.allow_private_targets, true);
  t.equal(c.api['tls.cert'], '/x.pem');
  t.equal(envName('api', 'tls.cert'), 'POSTHASTE_API_TLS_CERT');
});

t.test('unknown keys, sections and bad values are refused naming the key', async (t) => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['[server]\nhostnme = "x"\n', {}, /server\.hostnme: unknown key/],
    ['[nope]\nx = 1\n', {}, /nope: unknown section/],
    ['[outbound]\nport = "25"\n', {}, /outbound\.port: expected an integer/],
    ['[outbound]\nport = 70000\n', {}, /outbound\.port: must be between/],
    ['[api]\nlisten = "8025"\n', {}, /api\.listen/],
    ['[webhooks]\nallow_private_targets = "yes"\n', {}, /webhooks\.allow_private_targets/],
    ['[limits]\nidempotency_ttl = "soon"\n', {}, /limits\.idempotency_ttl/],
    ['[log]\nlevel = "loud"\n', {}, /log\.level/],
    ['not toml = = =', {}, /not valid TOML/],
    ['', { POSTHASTE_OUTBOUND_PORTT: '1' }, /POSTHASTE_OUTBOUND_PORTT: unknown environment override/],
    ['', { POSTHASTE_OUTBOUND_PORT: 'x' }, /outbound\.port \(from POSTHASTE_OUTBOUND_PORT\)/],
  ];
  for (const [toml, env, re] of cases) t.throws(() => loadConfig({ path: withFile(toml), env }), re, re.source);
  t.throws(() => loadConfig({ path: '/nonexistent/posthaste.toml', env: {} }), /posthaste.toml: cannot read/);
});

t.test('durations parse with units', async (t) => {
  t.equal(parseDuration('500ms'), 500);
  t.equal(parseDuration('5m'), 300_000);
  t.equal(parseDuration('72h'), 72 * 3_600_000);
  t.equal(parseDuration(30), 30_000);
  t.throws(() => parseDuration('5 minutes'));
});

t.test('config print masks secrets', async (t) => {
  const sch: Schema = {
    s: {
      token: { kind: { type: 'string' }, default: '', description: 'a secret', secret: true },
      plain: { kind: { type: 'string' }, default: 'x', description: 'd' },
    },
  };
  const c = loadConfig({ path: withFile('[s]\ntoken = "hunter2"\n'), env: {}, schema: sch });
  const shown = describeConfig(c as never, sch);
  t.same(shown, { s: { token: '********', plain: 'x' } });
  t.notMatch(JSON.stringify(shown), 'hunter2');
});

t.test('config/posthaste.example.toml documents every key, parses, and matches the schema', async (t) => {
  const path = join(root, 'config/posthaste.example.toml');
  const text = readFileSync(path, 'utf8');
  const parsed = parse(text) as Record<string, Record<string, unknown>>;
  const flat = new Set<string>();
  const walk = (prefix: string, o: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(o))
      if (v && typeof v === 'object' && !Array.isArray(v)) walk(`${prefix}${k}.`, v as Record<string, unknown>);
      else flat.add(prefix + k);
  };
  walk('', parsed);
  const expected = new Set(
    Object.entries(schema as Schema).flatMap(([s, keys]) => Object.keys(keys).map((k) => `${s}.${k}`)),
  );
  for (const key of Object.keys(EXAMPLE_UNSET)) expected.delete(key);
  t.same([...flat].sort(), [...expected].sort(), 'exactly the schema keys, but those left unset');
  t.same(
    Object.keys(EXAMPLE_UNSET),
    ['server.node_name', 'outbound.warmup_schedule', 'outbound.pools'],
    'the node name, the warm-up schedule and the pools are left to their defaults',
  );
  t.match(
    text,
    /\n# \[\[outbound\.pools\]\]\n# name = "transactional"\n# addresses = \[ \{ ip = /,
    'a pool as a sample',
  );
  t.match(text, /\n# Default: this machine's host name \(os\.hostname\(\)\)\.[^\n]*\n# node_name = "mail-1"\n/);
  t.equal(loadConfig({ path, env: {} }).server.node_name, hostname(), 'a node made from it goes by its host name');
  t.ok(loadConfig({ path, env: {} }), 'loads without error');
  for (const [section, keys] of Object.entries(schema as Schema))
    for (const [key, spec] of Object.entries(keys))
      t.match(text, spec.description, `${section}.${key} has its description as a comment`);
  t.equal(
    text,
    renderExample(),
    'the file is what `posthaste config example` prints (regenerate it after a schema change)',
  );
  t.ok(loadConfig({ path: join(root, 'config/development.toml'), env: {} }), 'development.toml loads');
});

t.test('outbound.destination_limits is checked at load, naming the key and the entry', async (t) => {
  const c = loadConfig({
    path: withFile(
      '[outbound]\ndestination_limits = ["outlook.com connections=5", "google.com per_minute=600"]\nmessages_per_minute = 100\n',
    ),
    env: {},
  });
  const limits = destinationLimits(c);
  t.same(limits('outlook.com'), { connections: 5, perConnection: 100, perMinute: 100 });
  t.same(limits('google.com'), { connections: 10, perConnection: 100, perMinute: 600 });
  t.same(limits('elsewhere.example'), { connections: 10, perConnection: 100, perMinute: 100 });
  t.throws(
    () => loadConfig({ path: withFile('[outbound]\ndestination_limits = ["outlook.com conections=5"]\n'), env: {} }),
    /outbound\.destination_limits: "outlook\.com conections=5": "conections=5" is not one of/,
  );
  // A lookup is the configuration as it was built from; a reload builds a new one.
  const next = { outbound: { ...c.outbound, destination_limits: ['outlook.com connections=2'] } };
  t.equal(destinationLimits(next)('outlook.com').connections, 2);
  t.equal(limits('outlook.com').connections, 5, 'the old lookup is unchanged');
});

t.test(
  '[submission]: off by default; a listener takes AUTH in the clear only on loopback with allow_plaintext_auth_on_loopback, else needs a certificate',
  async (t) => {
    const d = loadConfig({ path: withFile(''), env: {} });
    t.same(
      [d.submission.listen, d.submission.listen_tls, d.submission.allow_plaintext_auth_on_loopback],
      ['', '', false],
      'off, and AUTH only over TLS',
    );
    const dev = loadConfig({ path: join(root, 'config/development.toml'), env: {} });
    t.same(
      [dev.submission.listen, dev.submission.allow_plaintext_auth_on_loopback],
      ['127.0.0.1:2587', true],
      'the development configuration: on, on loopback',
    );
    const cert = join(root, 'test/fixtures/tls/server.pem');
    const key = join(root, 'test/fixtures/tls/server-key.pem');
    t.ok(
      loadConfig({
        path: withFile('[submission]\nlisten = "127.0.0.1:2587"\nallow_plaintext_auth_on_loopback = true\n'),
        env: {},
      }),
    );
    t.ok(
      loadConfig({
        path: withFile(
          `[submission]\nlisten = "0.0.0.0:587"\nlisten_tls = "0.0.0.0:465"\ntls.cert = "${cert}"\ntls.key = "${key}"\n`,
        ),
        env: {},
      }),
    );
    t.throws(
      () =>
        loadConfig({
          path: withFile('[submission]\nlisten = "0.0.0.0:587"\nallow_plaintext_auth_on_loopback = true\n'),
          env: {},
        }),
      /submission\.tls\.cert: submission\.listen = "0\.0\.0\.0:587" needs a certificate/,
    );
    t.throws(
      () => loadConfig({ path: withFile('[submission]\nlisten = "127.0.0.1:2587"\n'), env: {} }),
      /submission\.tls\.cert: .*needs a certificate/,
      'loopback without the setting still needs one',
    );
    t.throws(
      () =>
        loadConfig({
          path: withFile('[submission]\nlisten_tls = "127.0.0.1:465"\nallow_plaintext_auth_on_loopback = true\n'),
          env: {},
        }),
      /submission\.listen_tls: implicit TLS needs/,
    );
    t.throws(
      () => loadConfig({ path: withFile(`[submission]\nlisten = "127.0.0.1:2587"\ntls.cert = "${cert}"\n`), env: {} }),
      /submission\.tls\.key: tls\.cert and tls\.key go together/,
    );
  },
);

t.test('a placeholder hostname is warned about, naming the key, unless SMTP listens on loopback only', async (t) => {
  const at = (toml: string) => configWarnings(loadConfig({ path: withFile(toml), env: {} }));
  const example = loadConfig({ path: withFile(renderExample()), env: {} });
  t.same(
    configWarnings(example).map((w) => w.key),
    ['server.hostname'],
    "the example file's hostname as written",
  );
  t.match(
    configWarnings(example)[0]!.message,
    /server\.hostname is "mx\.example\.net", a placeholder: set it to this machine's public name/,
  );
  for (const name of [
    'localhost',
    'localhost.localdomain',
    'mail.example.com',
    'mx.test',
    'debian',
    'box.localdomain',
    'a.invalid',
    'MX.Example.ORG.',
  ])
    t.ok(isPlaceholderName(name), `${name} is a placeholder`);
  for (const name of ['mx.posthaste.dev', 'mail.examples.com', 'example.community', 'smtp.testing.org'])
    t.notOk(isPlaceholderName(name), `${name} is not`);
  t.same(at('[server]\nhostname = "mx.posthaste.dev"\n'), [], 'a real name: nothing');
  t.same(
    at('[server]\nhostname = "mx.posthaste.dev"\n[smtp]\nreturn_path_domain = "bounces.example.com"\n').map(
      (w) => w.key,
    ),
    ['smtp.return_path_domain'],
  );
  t.same(
    at('[server]\nhostname = "localhost"\n[smtp]\nlisten = "127.0.0.1:2525"\n'),
    [],
    'development: SMTP on loopback only',
  );
  t.same(at('[server]\nhostname = "localhost"\n[smtp]\nlisten = "[::1]:2525"\n'), []);
  t.same(
    at('[server]\nhostname = "localhost"\n[smtp]\nlisten = "[::]:25"\n').map((w) => w.key),
    ['server.hostname'],
  );
  const dev = loadConfig({ path: join(root, 'config', 'development.toml'), env: {} });
  t.same(configWarnings(dev), [], 'npm start warns of nothing');
});

t.test('the configuration file: the one named, else POSTHASTE_CONFIG', async (t) => {
  t.equal(configPath('/a.toml', { POSTHASTE_CONFIG: '/b.toml' }), '/a.toml');
  t.equal(configPath(undefined, { POSTHASTE_CONFIG: '/b.toml' }), '/b.toml');
});
