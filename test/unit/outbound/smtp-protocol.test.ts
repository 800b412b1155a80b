import net from 'node:net';
import type { TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import { SmtpError } from '../../../src/outbound/smtp/errors.js';
import { SmtpClient } from '../../../src/outbound/smtp/protocol.js';
import { transportReply } from '../../../src/outbound/smtp/session.js';
import { TestMx } from '../../../support/mx-server.js';
import { freePort } from '../../../support/postfix.js';
import { type PeerScript, ScriptedPeer } from '../../helpers/scripted-peer.js';

// The delivery path's SMTP client against a scripted server on loopback that records what arrives
// and in which reads. Real servers (smtp-server, Postfix) are in the integration tests; these
// cases are the ones a well-behaved server never shows: a DATA accepted after a refused RCPT,
// a reply the size of a file, a server that holds its replies until the whole pipeline is in.

const opts = (port: number) => ({
  host: '127.0.0.1',
  port,
  name: 'client.test',
  connectTimeout: 2000,
  greetingTimeout: 2000,
  commandTimeout: 2000,
  startTls: false,
  tls: {},
});

async function withServer(
  t: Test,
  script: PeerScript,
  options: { chunking?: boolean } = {},
): Promise<{ server: ScriptedPeer; client: SmtpClient }> {
  const server = await new ScriptedPeer(script).start();
  const client = await SmtpClient.connect({ ...opts(server.port), ...options });
  t.teardown(async () => {
    client.destroy();
    await server.stop();
  });
  return { server, client };
}

const MESSAGE = Buffer.from('Subject: x\r\n\r\nbody\r\n');

t.test('PIPELINING offered: MAIL, RCPT and DATA go in one write, the message in one more', async (t) => {
  const { server, client } = await withServer(t, { holdUntilData: true });
  const reply = await client.send('from@example.com', 'to@example.org', MESSAGE);
  t.equal(reply, '250 2.0.0 queued');
  t.same(
    server.reads.at(-1),
    ['MAIL FROM:<from@example.com>', 'RCPT TO:<to@example.org>', 'DATA'],
    'the three commands arrived in one read, before any reply',
  );
  await client.send('from@example.com', 'two@example.org', MESSAGE);
  t.equal(server.messages.length, 2, 'and a second transaction on the same connection');
});

t.test('no PIPELINING: one command at a time, each after its reply', async (t) => {
  const { server, client } = await withServer(t, { ehlo: ['SIZE 1000'] });
  t.notOk(client.has('PIPELINING'));
  t.equal(client.has('SIZE'), true, 'extensions read from the multi-line EHLO reply');
  await client.send('from@example.com', 'to@example.org', MESSAGE);
  t.ok(
    server.reads.every((r) => r.length === 1),
    `never two commands in one read (${JSON.stringify(server.reads)})`,
  );
});

t.test('the message as sent: dots doubled at line starts, bare LF as CRLF, the ending dot line', async (t) => {
  const { server, client } = await withServer(t, {});
  await client.send(
    'f@example.com',
    't@example.org',
    Buffer.from('.first\r\nbare\nlf\n.dot after lf\r\n..two\r\nlast without break'),
  );
  t.equal(server.messages[0], '..first\r\nbare\r\nlf\r\n..dot after lf\r\n...two\r\nlast without break\r\n.\r\n');
  await client.send('f@example.com', 't@example.org', Buffer.from('ends with CRLF\r\n'));
  t.equal(server.messages[1], 'ends with CRLF\r\n.\r\n', 'no extra line when the message ends with one');
});

/** A server offering CHUNKING (RFC 3030) as well as PIPELINING, and a client that uses it unless told not to. */
const withChunking = (t: Test, script: PeerScript, chunking = true) =>
  withServer(t, { ehlo: ['PIPELINING', 'CHUNKING', 'SIZE 100000'], ...script }, { chunking });

const DOTTED = Buffer.from('Subject: x\r\n\r\n.a line that starts with a dot\r\n.\r\nbody\r\n');

t.test(
  'CHUNKING offered: MAIL, RCPT, BDAT and the message in one write, answered in one round trip (RFC 3030)',
  async (t) => {
    const { server, client } = await withChunking(t, { holdUntilData: true });
    t.equal(await client.send('from@example.com', 'to@example.org', DOTTED), '250 2.0.0 queued');
    t.same(
      server.reads.at(-1),
      [`MAIL FROM:<from@example.com> SIZE=${DOTTED.length}`, 'RCPT TO:<to@example.org>', `BDAT ${DOTTED.length} LAST`],
      'the envelope and BDAT arrived together, before any reply',
    );
    t.equal(server.messages[0], DOTTED.toString('latin1'), 'the message as it is: no dot-stuffing, no ending dot line');
    await client.send('from@example.com', 'two@example.org', MESSAGE);
    t.same(
      server.messages,
      [DOTTED.toString('latin1'), MESSAGE.toString('latin1')],
      'and a second transaction on the same connection',
    );
  },
);

t.test(
  'DATA instead of BDAT: when chunking is off, without PIPELINING, or for a message that is not CRLF lines to its end',
  async (t) => {
    const off = await withChunking(t, {}, false);
    await off.client.send('f@example.com', 't@example.org', MESSAGE);
    t.ok(off.server.reads.flat().includes('DATA'), 'outbound.chunking = false');
    const serial = await withChunking(t, { ehlo: ['CHUNKING'] });
    await serial.client.send('f@example.com', 't@example.org', MESSAGE);
    t.ok(serial.server.reads.flat().includes('DATA'), 'CHUNKING without PIPELINING');
    const bare = await withChunking(t, {});
    await bare.client.send('f@example.com', 't@example.org', Buffer.from('Subject: x\r\n\r\nbare\nlf\r\n'));
    await bare.client.send(
      'f@example.com',
      't@example.org',
      Buffer.from('Subject: x\r\n\r\nno line ending at the end'),
    );
    t.same(
      bare.server.messages,
      ['Subject: x\r\n\r\nbare\r\nlf\r\n.\r\n', 'Subject: x\r\n\r\nno line ending at the end\r\n.\r\n'],
      'sent with DATA, made CRLF lines as DATA sends them',
    );
    t.notOk(bare.server.reads.flat().some((l) => l.startsWith('BDAT')));
  },
);

t.test(
  'BDAT after a refused RCPT TO: the refusal is reported, the chunk answer read, the dialogue stays in step',
  async (t) => {
    // As Postfix answers: the chunk is read and refused for want of a recipient.
    let valid = false;
    const { server, client } = await withChunking(t, {
      answer: (l) => {
        if (l.startsWith('RCPT')) valid = !l.startsWith('RCPT TO:<nobody');
        if (l.startsWith('RCPT') && !valid) return '550 5.1.1 no such user';
        return l.startsWith('BDAT') && !valid ? '554 5.5.1 Error: no valid recipients' : undefined;
      },
    });
    const e = (await client.send('f@example.com', 'nobody@example.org', MESSAGE).catch((x: unknown) => x)) as SmtpError;
    t.match(e, { code: 'EENVELOPE', command: 'RCPT TO', responseCode: 550, response: '550 5.1.1 no such user' });
    t.equal(server.messages.length, 1, 'the server read the chunk');
    t.equal(await client.reset(), true, 'RSET answered as RSET');
    t.equal(
      await client.send('f@example.com', 'somebody@example.org', MESSAGE),
      '250 2.0.0 queued',
      'the next transaction is answered by its own replies',
    );
  },
);

t.test('BDAT refused: the refusal names BDAT, which delivery counts as after the message', async (t) => {
  const { client } = await withChunking(t, {
    answer: (l) => (l.startsWith('BDAT') ? '550 5.7.1 message content rejected' : undefined),
  });
  const e = (await client.send('f@example.com', 't@example.org', MESSAGE).catch((x: unknown) => x)) as SmtpError;
  t.match(e, { code: 'EPROTOCOL', command: 'BDAT', responseCode: 550, response: '550 5.7.1 message content rejected' });
  t.equal(client.closed, false, 'the connection goes on');
});

t.test(
  'BDAT answered as an unknown command: ECHUNKING, and the connection is closed (the message may have been read as commands)',
  async (t) => {
    const { client } = await withChunking(t, {
      answer: (l) => (l.startsWith('BDAT') ? '500 5.5.2 Error: command not recognized' : undefined),
    });
    const e = (await client.send('f@example.com', 't@example.org', MESSAGE).catch((x: unknown) => x)) as SmtpError;
    t.match(e, { code: 'ECHUNKING', command: 'BDAT', responseCode: 500 });
    t.equal(client.closed, true);
  },
);

t.test('a refused MAIL FROM in a pipeline: its reply is the refusal, the dialogue stays in step', async (t) => {
  const { client } = await withServer(t, {
    answer: (l) =>
      l.startsWith('MAIL FROM:<bad')
        ? '550 5.7.1 sender refused'
        : l.startsWith('RCPT') || l === 'DATA'
          ? undefined
          : undefined,
  });
  const e = (await client.send('bad@example.com', 'to@example.org', MESSAGE).catch((x: unknown) => x)) as SmtpError;
  t.match(e, { code: 'EENVELOPE', command: 'MAIL FROM', response: '550 5.7.1 sender refused', responseCode: 550 });
  t.equal(await client.reset(), true, 'RSET answered as RSET');
  t.equal(
    await client.send('good@example.com', 'to@example.org', MESSAGE),
    '250 2.0.0 queued',
    'the next transaction is answered by its own replies',
  );
});

t.test(
  'a refused RCPT TO with DATA accepted anyway: an empty message ends it (RFC 2920 3.1), and the refusal is reported',
  async (t) => {
    const { server, client } = await withServer(t, {
      answer: (l) => (l.startsWith('RCPT TO:<nobody') ? '550 5.1.1 no such user' : undefined),
    });
    const e = (await client.send('f@example.com', 'nobody@example.org', MESSAGE).catch((x: unknown) => x)) as SmtpError;
    t.match(e, { command: 'RCPT TO', responseCode: 550 });
    t.same(server.messages, ['.\r\n'], 'the server got the empty message, not ours');
    t.equal(await client.reset(), true);
    await client.send('f@example.com', 'somebody@example.org', MESSAGE);
    t.equal(server.messages.length, 2);
  },
);

t.test('421 at MAIL FROM and the server closes: the 421 is what is reported, and the client is closed', async (t) => {
  const { client } = await withServer(t, {
    answer: (l) => (l.startsWith('MAIL') ? '421 4.7.0 too fast, closing' : undefined),
  });
  const e = (await client.send('f@example.com', 't@example.org', MESSAGE).catch((x: unknown) => x)) as SmtpError;
  t.match(e, { command: 'MAIL FROM', responseCode: 421 });
  await new Promise((r) => setTimeout(r, 50));
  t.equal(client.closed, true);
});

t.test('SIZE: the size is declared, and a message over the stated limit is not sent (RFC 1870)', async (t) => {
  const { server, client } = await withServer(t, { ehlo: ['PIPELINING', 'SIZE 1000'] });
  await client.send('f@example.com', 't@example.org', MESSAGE);
  t.ok(server.reads.flat().includes(`MAIL FROM:<f@example.com> SIZE=${MESSAGE.length}`), 'declared');
  const big = Buffer.from(`Subject: big\r\n\r\n${'x'.repeat(1200)}\r\n`);
  const e = (await client.send('f@example.com', 't@example.org', big).catch((x: unknown) => x)) as SmtpError;
  t.match(e, { code: 'EENVELOPE', command: 'MAIL FROM', responseCode: 552, response: /^552 5\.3\.4 .*1000 bytes/ });
  t.equal(server.messages.length, 1, 'the large one was not sent');
  t.equal(
    await client.send('f@example.com', 't@example.org', MESSAGE),
    '250 2.0.0 queued',
    'and the connection goes on',
  );
});

t.test('EHLO refused: HELO, and no extension is assumed', async (t) => {
  const { server, client } = await withServer(t, {
    answer: (l) => (l.startsWith('EHLO') ? '502 5.5.1 no ESMTP here' : undefined),
  });
  t.notOk(client.has('PIPELINING'));
  await client.send('f@example.com', 't@example.org', MESSAGE);
  t.same(server.reads[1], ['HELO client.test']);
});

t.test('an address needing SMTPUTF8: refused before sending where not offered, declared where offered', async (t) => {
  const plain = await withServer(t, {});
  const e = (await plain.client
    .send('f@example.com', 'jörg@example.org', MESSAGE)
    .catch((x: unknown) => x)) as SmtpError;
  t.match(e, { code: 'EENVELOPE', responseCode: 553 });
  t.notOk(
    plain.server.reads.flat().some((l) => l.startsWith('RCPT')),
    'nothing sent',
  );
  const utf8 = await withServer(t, { ehlo: ['PIPELINING', 'SMTPUTF8'] });
  await utf8.client.send('f@example.com', 'jörg@example.org', MESSAGE);
  t.ok(utf8.server.reads.flat().includes('MAIL FROM:<f@example.com> SMTPUTF8'));
});

t.test('AUTH LOGIN where PLAIN is not offered; a refusal is EAUTH with the reply, never the password', async (t) => {
  const seen: string[] = [];
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const { client } = await withServer(t, {
    ehlo: ['AUTH LOGIN'],
    answer: (l) => {
      seen.push(l);
      if (l === 'AUTH LOGIN' || l === b64('user')) return '334 go on';
      if (l === b64('right')) return '235 2.7.0 ok';
      if (l === b64('wrong')) return '535 5.7.8 bad credentials';
      return undefined;
    },
  });
  const e = (await client.login('user', 'wrong').catch((x: unknown) => x)) as SmtpError;
  t.match(e, { code: 'EAUTH', responseCode: 535 });
  t.notMatch(`${e.message} ${e.response}`, /wrong|d3Jvbmc/, 'the password is not in the error');
  await client.login('user', 'right');
  t.ok(seen.includes(b64('right')), 'LOGIN: user, then password, each base64');
});

t.test('what is not SMTP: a reply that never ends, a line that is not a reply, a silent server', async (t) => {
  const flood = net.createServer((s) => {
    s.write('220 ok\r\n');
    s.on('data', () => s.write(`250-${'x'.repeat(70_000)}`));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => flood.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => flood.close(() => r())));
  const e1 = (await SmtpClient.connect(opts((flood.address() as net.AddressInfo).port)).catch(
    (x: unknown) => x,
  )) as SmtpError;
  t.match(e1, { code: 'EPROTOCOL', message: /too long/ });

  const garbage = net.createServer((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
  await new Promise<void>((r) => garbage.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => garbage.close(() => r())));
  const e2 = (await SmtpClient.connect(opts((garbage.address() as net.AddressInfo).port)).catch(
    (x: unknown) => x,
  )) as SmtpError;
  t.match(e2, { code: 'EPROTOCOL', command: 'CONN' });

  const silent = net.createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => silent.close(() => r())));
  const started = Date.now();
  const e3 = (await SmtpClient.connect({
    ...opts((silent.address() as net.AddressInfo).port),
    greetingTimeout: 300,
  }).catch((x: unknown) => x)) as SmtpError;
  t.match(e3, { code: 'ETIMEDOUT', command: 'CONN' });
  t.ok(Date.now() - started < 1500, 'the greeting timeout, not the command timeout');
});

t.test(
  'every TLS failure is ETLS, which delivery records as tls_failure; others are connection failures or timeouts',
  async (t) => {
    const required = (port: number) => ({ ...opts(port), startTls: true, requireTls: true, commandTimeout: 300 });
    const failure = async (script: PeerScript): Promise<SmtpError> => {
      const server = await new ScriptedPeer(script).start();
      t.teardown(() => server.stop());
      return (await SmtpClient.connect(required(server.port)).catch((x: unknown) => x)) as SmtpError;
    };
    const cases = [
      ['STARTTLS not offered', await failure({ ehlo: ['PIPELINING'] })],
      [
        'STARTTLS refused',
        await failure({
          ehlo: ['STARTTLS'],
          answer: (l) => (l === 'STARTTLS' ? '454 4.7.0 TLS not available now' : undefined),
        }),
      ],
      [
        'STARTTLS accepted, then no TLS from the server',
        await failure({ ehlo: ['STARTTLS'], answer: (l) => (l === 'STARTTLS' ? '220 go ahead' : undefined) }),
      ],
    ] as const;
    for (const [what, e] of cases) {
      t.equal(e.code, 'ETLS', what);
      t.match(
        transportReply(e),
        { code: 451, enhanced_code: '4.7.5', classification: 'tls_failure' },
        `${what}: tls_failure`,
      );
    }

    const refused = (await SmtpClient.connect(opts(await freePort())).catch((x: unknown) => x)) as SmtpError;
    t.match(
      transportReply(refused),
      { enhanced_code: '4.4.2', classification: 'connection_failure' },
      'a refused connection',
    );
    // A failure whose words mention TLS is not a TLS failure unless the client says so.
    t.match(
      transportReply(new SmtpError('connection closed by the remote server after TLS', 'ECONNECTION')),
      { classification: 'connection_failure' },
      'TLS in the words only',
    );
    t.match(
      transportReply(new SmtpError('the server sent nothing for too long', 'ETIMEDOUT')),
      { enhanced_code: '4.4.1', classification: 'timeout' },
      'a timeout',
    );
  },
);

t.test(
  'after STARTTLS, checkPeer may refuse the server: its reason, or a check that throws, is an ETLS failure and the connection is closed',
  async (t) => {
    const mx = await new TestMx('127.0.0.1').start();
    t.teardown(() => mx.stop());
    const secure = (checkPeer: (socket: TLSSocket) => string | null) =>
      SmtpClient.connect({
        ...opts(mx.port),
        startTls: true,
        requireTls: true,
        tls: { rejectUnauthorized: false },
        checkPeer,
      });
    const accepted = await secure((socket) => (socket.getPeerCertificate().raw ? null : 'no certificate'));
    t.ok(accepted.secure, 'a server the check accepts: over TLS');
    accepted.destroy();
    const refused = (await secure(() => 'DANE: the certificate matches none of the TLSA records').catch(
      (x: unknown) => x,
    )) as SmtpError;
    t.match(refused, { code: 'ETLS', message: 'STARTTLS: DANE: the certificate matches none of the TLSA records' });
    const broken = (await secure(() => {
      throw new Error('bad DER');
    }).catch((x: unknown) => x)) as SmtpError;
    t.match(
      broken,
      { code: 'ETLS', message: /could not be checked: bad DER/ },
      'a check that throws refuses, and does not crash the process',
    );
  },
);
