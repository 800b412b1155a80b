import t from 'tap';
import { zoneStrings } from '../../support/dns-server.js';
import { json, runCli } from '../helpers/cli.js';
import { type ClusterNode, clusterSkipped, startCluster } from '../helpers/cluster.js';
import { makeKey } from '../helpers/env.js';
import { type Json, request } from '../helpers/http.js';
import { receiverVerdict } from '../helpers/receiver.js';

// Sending identities on three nodes sharing one PostgreSQL (docs/delivery.md, "Sending
// identities"): each node sends from an address of its own (127.0.0.11-13, each with its PTR
// and EHLO name), in a pool of one name across the nodes. `posthaste dns server` on any node
// prints one SPF record covering every node's address (outbound.source_addresses); with it and
// the domain's return-path CNAME published, a receiver checking with a library that is not ours
// (mailauth, resolving through the loopback DNS server) finds SPF pass, DKIM pass and DMARC pass,
// aligned on both, for the mail each node sends, from that node's own address and EHLO name.

if (!clusterSkipped()) {
  const ADDRESSES = ['127.0.0.11', '127.0.0.12', '127.0.0.13'];
  const ehloOf = (ip: string) => `mta${ip.split('.')[3]}.ids.test`;
  const cluster = await startCluster({
    mxDomains: ['rcpt.test'],
    outbound: `source_addresses = ${JSON.stringify(ADDRESSES)}\n`,
  });
  const { dns, mx } = cluster;
  for (const ip of ADDRESSES) {
    dns.set(`${ip.split('.').reverse().join('.')}.in-addr.arpa`, { PTR: [ehloOf(ip)] });
    dns.set(ehloOf(ip), { A: [ip] });
  }
  const nodes: ClusterNode[] = [];
  for (const [i, ip] of ADDRESSES.entries())
    nodes.push(
      await cluster.node(['a', 'b', 'c'][i]!, {
        outbound: `[[outbound.pools]]\nname = "transactional"\naddresses = [ { ip = "${ip}", ehlo = "${ehloOf(ip)}" } ]\n`,
        daemon: { manualDelivery: true },
      }),
    );
  const cli = (...args: string[]) => runCli(['--config', nodes[0]!.path, ...args]);
  const key = await makeKey(await cluster.store());

  t.test(
    "one SPF record covers every node's address; each node's mail passes SPF, DKIM and DMARC, aligned",
    async (t) => {
      const server = json<Json>(await runCli(['--config', nodes[2]!.path, 'dns', 'server', '--json']));
      t.same(
        server.records.map((r: Json) => [r.type, r.name, r.text ?? r.value]),
        [
          ['MX', 'bounces.test.posthaste', '10 mx.test.posthaste'],
          ['TXT', 'bounces.test.posthaste', 'v=spf1 ip4:127.0.0.11 ip4:127.0.0.12 ip4:127.0.0.13 ~all'],
        ],
        'printed the same by any node: every address of every node',
      );
      dns.set('bounces.test.posthaste', {
        MX: [{ preference: 10, exchange: 'mx.test.posthaste' }],
        TXT: [server.records[1].text],
      });

      const added = json<Json>(await cli('domains', 'add', 'acme.example', '--json'));
      for (const r of added.dns_records)
        if (['verification', 'dkim', 'dmarc'].includes(r.purpose)) dns.set(r.name, { TXT: [zoneStrings(r.value)] });
      dns.set('bounces.acme.example', { CNAME: 'bounces.test.posthaste.' });
      const verified = await cli('domains', 'verify', 'acme.example', '--json');
      t.equal(verified.code, 0, verified.stderr);
      t.match(json<Json>(verified).return_path, { holds: true, envelope_domain: 'bounces.acme.example' });

      for (const [i, node] of nodes.entries()) {
        const to = `n${i}@rcpt.test`;
        const sent = await request(`${node.daemon.apiUrl}/api/v1/emails`, {
          key,
          body: { from: 'Acme <news@acme.example>', to, subject: 'Hi', text_body: 'Signed.' },
        });
        t.equal(sent.status, 202, JSON.stringify(sent.body));
        // Only this node delivers it: the others' loops run only when drained.
        await node.daemon.scheduler.drain();
        const got = mx.received.find((m) => m.to[0] === to);
        if (!got) {
          t.fail(`${to} not delivered by node ${node.name}`);
          continue;
        }
        t.same(
          [got.remoteAddress, got.helo],
          [ADDRESSES[i], ehloOf(ADDRESSES[i]!)],
          `node ${node.name}: from its own address, saying its own name`,
        );
        t.match(got.from, /^bounces\+[0-9a-z]{20}@bounces\.acme\.example$/, "the envelope sender on the domain's host");
        t.match(
          await receiverVerdict(got, dns.server),
          {
            spf: 'pass',
            spfDomain: 'bounces.acme.example',
            dkim: [['pass', 'acme.example', 'acme.example']],
            dmarc: 'pass',
            alignedSpf: 'bounces.acme.example',
            alignedDkim: 'acme.example',
          },
          `node ${node.name}: SPF, DKIM and DMARC pass, aligned on both`,
        );
      }
    },
  );
}
