import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { BIN, cleanEnv } from '../../support/daemon-process.js';
import { json, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';

/** `posthaste reports parse -` with `input` on standard input. */
function parseStdin(input: Buffer, args: string[] = []): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'reports', 'parse', '-', '--json', ...args], {
      env: cleanEnv(),
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('exit', (code) => resolve({ code, stdout }));
    child.stdin.end(input);
  });
}

t.test('reports parse prints one JSON object in the documented shape, from a file or standard input', async (t) => {
  const r = await runCli(['reports', 'parse', fixturePath('dsn/postfix.eml'), '--json']);
  t.equal(r.code, 0);
  t.same(json(r), {
    kind: 'dsn',
    original_message_id: '01jdsnfixture00000000000000@example.com',
    recipients: [
      {
        address: 'bob@example.net',
        original_recipient: 'bob@example.net',
        action: 'failed',
        status: '5.1.1',
        reply_code: 550,
        diagnostic: '550 5.1.1 <bob@example.net>: Recipient address rejected: User unknown in virtual mailbox table',
        classification: 'unknown_recipient',
        permanent: true,
        suppress: true,
      },
    ],
    feedback: null,
  });
  const complaint = json<{ kind: string; feedback: unknown; recipients: unknown[] }>(
    await runCli(['reports', 'parse', fixturePath('arf/yahoo.eml'), '--json']),
  );
  t.same(complaint.feedback, {
    feedback_type: 'abuse',
    user_agent: 'Yahoo!-Mail-Feedback/2.0',
    arrival_date: 'Sat, 21 Nov 2026 10:00:00 +0000',
    recipient: 'bob@yahoo.com',
  });
  t.same(complaint.recipients, []);
  const stdin = await parseStdin(Buffer.from('Subject: hello\r\n\r\nJust a message.\r\n'));
  t.equal(stdin.code, 0, 'exits 0 whatever it found');
  t.same(JSON.parse(stdin.stdout), { kind: 'none', original_message_id: null, recipients: [], feedback: null });
  // An alias's report: the final recipient is the one suppressed, the address the sender gave is printed beside it.
  const alias = await parseStdin(
    Buffer.from(
      [
        'From: MAILER-DAEMON@mx.example.net',
        'Subject: Undelivered Mail Returned to Sender',
        'Content-Type: multipart/report; report-type=delivery-status; boundary=b',
        '',
        '--b',
        'Content-Type: message/delivery-status',
        '',
        'Reporting-MTA: dns; mx.example.net',
        '',
        'Final-Recipient: rfc822; bob.smith@example.net',
        'Original-Recipient: rfc822;bob@example.org',
        'Action: failed',
        'Status: 5.1.1',
        '--b--',
        '',
      ].join('\r\n'),
    ),
  );
  const read = JSON.parse(alias.stdout) as {
    recipients: Array<{ address: string; original_recipient: string | null; suppress: boolean }>;
  };
  t.same(
    read.recipients.map((x) => [x.address, x.original_recipient, x.suppress]),
    [['bob.smith@example.net', 'bob@example.org', true]],
  );
  const garbage = await parseStdin(Buffer.from([0xff, 0x00, 0x1b, 0x80]));
  t.equal(garbage.code, 0);
  t.equal(JSON.parse(garbage.stdout).kind, 'none');
  const human = await runCli(['reports', 'parse', fixturePath('dsn/postfix.eml')]);
  t.match(
    human.stdout,
    /bounce of <01jdsnfixture.*\n {2}bob@example\.net: failed 5\.1\.1 unknown_recipient, suppresses/,
  );
});

t.test('reports parse reads with the [bounces] policy of the configuration', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const config = join(dir.path, 'posthaste.toml');
  const full = (await runCli(['reports', 'parse', fixturePath('dsn/exim.eml'), '--json'])).stdout;
  t.equal(JSON.parse(full).recipients[0].suppress, false, 'a disabled mailbox does not suppress by default');
  writeFileSync(config, '[bounces]\nsuppress_disabled = true\n');
  const r = await runCli(['--config', config, 'reports', 'parse', fixturePath('dsn/exim.eml'), '--json']);
  t.equal(JSON.parse(r.stdout).recipients[0].suppress, true, 'with suppress_disabled it does');
  t.equal(
    (await runCli(['reports', 'parse', join(dir.path, 'missing.eml')])).code,
    1,
    'an unreadable file is an error',
  );
});
