import dgram from 'node:dgram';
import net from 'node:net';
import * as dnsPacket from 'dns-packet';
import t from 'tap';
import { allLoopback, parseServer, querySecure } from '../../../src/lib/dns-secure.js';
import { TestDnsServer } from '../../../support/dns-server.js';

const dns = await new TestDnsServer().start();
t.teardown(() => dns.stop());
dns.signed.add('signed.test');
dns.set('mx.signed.test', { A: ['192.0.2.1'] });
dns.set('mx.unsigned.test', { A: ['192.0.2.2'] });
dns.failures.set('broken.signed.test', 'SERVFAIL');

t.test('the AD bit of a validating resolver, and the rcode, for answers and denials', async (t) => {
  t.match(await querySecure([dns.server], 'mx.signed.test', 'A'), {
    rcode: 'NOERROR',
    secure: true,
    answers: [{ type: 'A', data: '192.0.2.1' }],
  });
  t.match(await querySecure([dns.server], 'mx.unsigned.test', 'A'), { rcode: 'NOERROR', secure: false });
  t.match(await querySecure([dns.server], 'gone.signed.test', 'TLSA'), {
    rcode: 'NXDOMAIN',
    secure: true,
    answers: [],
  });
  t.match(await querySecure([dns.server], 'broken.signed.test', 'TLSA'), { rcode: 'SERVFAIL', secure: false });
});

t.test('a server that does not answer is passed over for the next; none answering is a DnsQueryError', async (t) => {
  const silent = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', () => resolve()));
  t.teardown(() => silent.close());
  const mute = `127.0.0.1:${silent.address().port}`;
  t.match(await querySecure([mute, dns.server], 'mx.signed.test', 'A', 200), { secure: true });
  await t.rejects(querySecure([mute], 'mx.signed.test', 'A', 200), {
    name: 'DnsQueryError',
    message: /did not answer in 200 ms/,
  });
});

t.test('a truncated UDP answer is asked again over TCP', async (t) => {
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', () => resolve()));
  const port = udp.address().port;
  const answer = (query: dnsPacket.DecodedPacket, truncated: boolean) =>
    dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags: dnsPacket.RECURSION_AVAILABLE | dnsPacket.AUTHENTIC_DATA | (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0),
      questions: query.questions,
      answers: truncated ? [] : [{ type: 'A', name: query.questions![0]!.name, ttl: 60, data: '192.0.2.9' }],
    });
  udp.on('message', (msg, from) => udp.send(answer(dnsPacket.decode(msg), true), from.port, from.address));
  const tcp = net.createServer((socket) =>
    socket.once('data', (msg: Buffer) => {
      const reply = answer(dnsPacket.decode(msg.subarray(2)), false);
      const length = Buffer.alloc(2);
      length.writeUInt16BE(reply.length);
      socket.end(Buffer.concat([length, reply]));
    }),
  );
  await new Promise<void>((resolve) => tcp.listen(port, '127.0.0.1', () => resolve()));
  t.teardown(() => {
    udp.close();
    tcp.close();
  });
  t.match(await querySecure([`127.0.0.1:${port}`], 'big.signed.test', 'A'), {
    secure: true,
    answers: [{ data: '192.0.2.9' }],
  });
});

t.test('server addresses as Resolver.getServers() gives them; only loopback ones are trusted', async (t) => {
  t.same(parseServer('127.0.0.1'), { host: '127.0.0.1', port: 53 });
  t.same(parseServer('127.0.0.53:5353'), { host: '127.0.0.53', port: 5353 });
  t.same(parseServer('[::1]:5353'), { host: '::1', port: 5353 });
  t.same(parseServer('2001:db8::1'), { host: '2001:db8::1', port: 53 });
  t.ok(allLoopback(['127.0.0.1', '127.0.0.53:53', '[::1]:53']));
  t.notOk(allLoopback(['127.0.0.1', '192.0.2.53']));
});
