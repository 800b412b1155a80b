// The CLI beside gh and postconf: every command says what it does, subcommand help shows the
// global options, --json errors are JSON, options with a fixed set of values refuse others and
// list them, messages page as the API does, and config prints what changed or one key.
import { spawn } from 'node:child_process';
import t from 'tap';
import { BIN, cleanEnv } from '../../support/daemon-process.js';
import { sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { makeDomain, makeKey, startTestServer, TEST_ENGINE } from '../helpers/env.js';
import { type Json, request } from '../helpers/http.js';

const s = await startTestServer('[outbound]\nhold = true\n', { manualDelivery: true });
// Each CLI command is a process of its own (1-3 s on a loaded machine): more than the default 120 s in all.
t.setTimeout(300_000);
t.teardown(() => s.close());
const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);

const NOUNS = [
  'customers',
  'keys',
  'domains',
  'messages',
  'webhooks',
  'suppressions',
  'inbound',
  'reports',
  'users',
  'db',
  'config',
];

t.test('every subcommand has a description, and its help shows --config and --json', async (t) => {
  for (const noun of NOUNS) {
    const help = (await cli(noun, '--help')).stdout;
    const commands = help.slice(help.indexOf('Commands:')).split('\n').slice(1);
    const bare = commands.filter((l) => /^ {2}\S/.test(l) && !/^ {2}\S.*\S {2,}\S/.test(l));
    t.same(bare, [], `${noun}: every command described`);
    const first = /^ {2}([a-z-]+)/m.exec(commands.join('\n'))![1]!;
    const sub = (await cli(noun, first, '--help')).stdout;
    t.match(
      sub,
      /Global Options:[\s\S]*--config <file>[\s\S]*--json/,
      `${noun} ${first} --help shows the global options`,
    );
  }
});

t.test('with --json, errors are JSON on stderr and the exit is non-zero', async (t) => {
  const usage = await cli('suppressions', 'list', '--reason', 'nope', '--json');
  t.not(usage.code, 0);
  t.equal(usage.stdout, '');
  t.match(JSON.parse(usage.stderr), {
    error: { code: 'usage', message: /Allowed choices are hard_bounce, spam_complaint, manual/ },
  });
  const failed = await cli('customers', 'show', 'nobody', '--json');
  t.equal(failed.code, 1);
  t.match(JSON.parse(failed.stderr), { error: { code: 'failed', message: /no customer named "nobody"/ } });
  const config = await runCli(['--config', '/nonexistent.toml', 'status', '--json']);
  t.equal(config.code, 2);
  t.match(JSON.parse(config.stderr), { error: { code: 'config', message: /nonexistent\.toml: cannot read/ } });
  const plain = await cli('customers', 'show', 'nobody');
  t.match(plain.stderr, /^posthaste: no customer named "nobody"/, 'without --json: one line of text, as before');
});

t.test('options with a fixed set of values refuse others, listing them', async (t) => {
  for (const [args, listed] of [
    [['suppressions', 'list', '--reason', 'bounced'], 'hard_bounce, spam_complaint, manual'],
    [['messages', 'list', '--state', 'sent'], 'queued, deferred, delivered'],
    [['webhooks', 'test', 'whk_x', '--type', 'email.sent'], 'email.delivered, email.deferred'],
    [
      ['webhooks', 'create', 'https://hooks.example.com/x', '--events', 'email.delivered,email.sent'],
      'unknown: email.sent. Allowed choices are email.delivered',
    ],
  ] as const) {
    const r = await cli(...args);
    t.equal(r.code, 1, args.join(' '));
    t.match(r.stderr, `Allowed choices`, args.join(' '));
    t.match(r.stderr, listed);
  }
  t.equal((await cli('suppressions', 'list', '--reason', 'manual')).code, 0, 'a valid one passes');
});

t.test('messages list pages as GET /api/v1/emails does, with --after', async (t) => {
  const key = await makeKey(s.store);
  await makeDomain(s.store, 'example.com');
  for (let i = 0; i < 5; i++)
    await sendEmail(s.url, key, { from: 'a@example.com', to: `r${i}@example.org`, subject: `m${i}`, text_body: 'x' });
  const apiPages: number[][] = [];
  for (let after: string | null = ''; after !== null; ) {
    const page: Json = (await request(`${s.url}/api/v1/emails?limit=2${after ? `&after=${after}` : ''}`, { key })).body;
    apiPages.push(page.data.map((m: Json) => m.email_id));
    after = page.next;
  }
  const cliPages: number[][] = [];
  for (let after: string | undefined; ; ) {
    const args = ['messages', 'list', '--limit', '2', ...(after ? ['--after', after] : [])];
    const page = json<Array<{ email_id: number }>>(await cli(...args, '--json'));
    cliPages.push(page.map((m) => m.email_id));
    after = /more: --after (\d+)/.exec((await cli(...args)).stdout)?.[1];
    if (!after) break;
  }
  t.same(cliPages, apiPages, 'the same pages, cursor for cursor');
  const old = await cli('messages', 'list', '--limit', '2', '--before', String(apiPages[0]![1]), '--json');
  t.same(
    json<Array<{ email_id: number }>>(old).map((m) => m.email_id),
    apiPages[1],
    '--before still pages, as --after',
  );
  t.match(old.stderr, /--before is deprecated/);
  t.not((await cli('messages', 'list', '--after', 'x')).code, 0, 'a cursor that is no email_id is refused');
});

t.test('config print --changed prints only what differs from the defaults; config get one key', async (t) => {
  const env = { POSTHASTE_OUTBOUND_RELAY_PASSWORD: 'hunter2-secret', POSTHASTE_LOG_LEVEL: 'debug' };
  const changed = await runCli(['--config', s.configPath, 'config', 'print', '--changed', '--json'], env);
  t.equal(changed.code, 0, changed.stderr);
  const shown = json<Record<string, Record<string, unknown>>>(changed);
  // [store] too when the tests run on PostgreSQL: its url and pool_size are set then.
  t.same(
    Object.keys(shown).sort(),
    [
      'api',
      'dashboard',
      'dns',
      'log',
      'outbound',
      'server',
      'smtp',
      ...(TEST_ENGINE === 'postgres' ? ['store'] : []),
    ].sort(),
  );
  t.same(shown.outbound, { hold: true, relay_password: '********' }, 'the file and the environment; a secret masked');
  t.same(shown.log, { level: 'debug' });
  t.notMatch(changed.stdout, 'hunter2');
  const short = await runCli(['--config', s.configPath, 'config', 'print', '-n']);
  t.match(short.stdout, /\[outbound\]\nhold = true/);
  t.notMatch(short.stdout, /retry_schedule/, 'defaults left out');

  t.equal((await cli('config', 'get', 'server.hostname')).stdout, 'mx.test.posthaste\n');
  t.equal((await cli('config', 'get', 'outbound.port')).stdout, '25\n', 'a default');
  t.same(json(await cli('config', 'get', 'outbound.hold', '--json')), { key: 'outbound.hold', value: true });
  t.equal(
    (await runCli(['--config', s.configPath, 'config', 'get', 'outbound.relay_password'], env)).stdout,
    '********\n',
    'masked',
  );
  t.equal((await cli('config', 'get', 'api.tls.cert')).stdout, '\n', 'a sub-table key');
  const typo = await cli('config', 'get', 'server.hostnme');
  t.equal(typo.code, 1);
  t.match(typo.stderr, /unknown key "server\.hostnme"; close: server\.hostname/);
  const section = await cli('config', 'get', 'outbound.retry');
  t.match(section.stderr, /close: .*outbound\.retry_schedule/);
});

/**
 * The CLI on a terminal (script(1) gives it one), each prompt answered as it appears: what the
 * terminal showed and the exit code. A prompt not in `answers` is left unanswered until the timeout.
 */
function onTerminal(args: string[], answers: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const line = [process.execPath, BIN, '--config', s.configPath, ...args].map((a) => `'${a}'`).join(' ');
  return new Promise((resolve) => {
    const child = spawn('script', ['-q', '-e', '-c', line, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: cleanEnv(),
    });
    let out = '';
    const asked = new Set<string>();
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const seen = (d: Buffer) => {
      out += d.toString();
      for (const [prompt, answer] of Object.entries(answers))
        if (!asked.has(prompt) && out.includes(prompt)) {
          asked.add(prompt);
          child.stdin.write(`${answer}\r`);
        }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

t.test('users add checks the password against the policy before asking for it again', async (t) => {
  const short = await onTerminal(['users', 'add', 'short@example.com', '--admin'], {
    'Password: ': 'short',
    'Again: ': 'short',
  });
  t.equal(short.code, 1, short.out);
  t.match(short.out, /a password has at least 10 characters/);
  t.notMatch(short.out, /Again:/, 'not asked to confirm a password that would be refused');
  const piped = await cli('users', 'add', 'short@example.com', '--admin', '--password-stdin');
  t.equal(piped.code, 1, 'read from standard input: the same rule');

  // The terminal path works: a good password, twice, adds the user.
  const good = await onTerminal(['users', 'add', 'long@example.com', '--admin'], {
    'Password: ': 'long enough password',
    'Again: ': 'long enough password',
  });
  t.equal(good.code, 0, good.out);
  t.match(good.out, /user long@example\.com added/);
});
