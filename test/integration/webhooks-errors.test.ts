import https from 'node:https';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { fixture } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

// A webhook that cannot be sent says which setting would change that, in the API's answer and in
// the attempt log.

/** An https receiver on loopback answering 200, with the given certificate. */
async function receiver(t: Test, cert: string, key: string): Promise<string> {
  const server = https.createServer({ cert: fixture(cert), key: fixture(key) }, (_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

t.test(
  'a receiver whose certificate is not trusted: the answer and the attempt log name webhooks.tls_ca_file',
  async (t) => {
    // Private targets allowed (the receivers are on loopback); no tls_ca_file.
    const s = await startMailEnv({ toml: '[webhooks]\nallow_private_targets = true\n', scope: t });
    const { key } = s;
    for (const [what, cert, certKey, code] of [
      ['self-signed', 'tls/self-signed.pem', 'tls/self-signed-key.pem', 'DEPTH_ZERO_SELF_SIGNED_CERT'],
      ['signed by a CA not trusted', 'tls/server.pem', 'tls/server-key.pem', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
    ] as const) {
      const url = await receiver(t, cert, certKey);
      const ep = await request(`${s.url}/api/v1/webhooks`, { key, body: { url } });
      t.equal(ep.status, 201, what);
      const tested = await request(`${s.url}/api/v1/webhooks/${ep.body.id}/test`, { key, body: {} });
      t.match(tested.body, { success: false, status: null }, what);
      const fix = new RegExp(
        `^${code}: .*: the receiver's certificate is not signed by a CA posthaste trusts; put its CA \\(or the self-signed certificate\\) in a PEM file named by webhooks\\.tls_ca_file$`,
      );
      t.match(tested.body.error, fix, `${what}: the API's answer`);
      const log: Json[] = (await request(`${s.url}/api/v1/webhooks/${ep.body.id}/deliveries`, { key })).body.data;
      t.match(log[0].error, fix, `${what}: the attempt log`);
    }
  },
);

t.test(
  'creating an endpoint: a host that does not exist and a DNS server that did not answer are told apart',
  async (t) => {
    const s = await startMailEnv({ scope: t });
    const { key, dns } = s;
    dns.set('noaddr.test', { TXT: ['x'] });
    dns.failures.set('servfail.test', 'SERVFAIL');
    const problem = async (url: string) => {
      const r = await request(`${s.url}/api/v1/webhooks`, { key, body: { url } });
      t.equal(r.status, 422, url);
      return r.body.error.details.url[0] as string;
    };
    t.equal(await problem('https://nx.test/hook'), 'nx.test does not exist (NXDOMAIN)');
    t.equal(await problem('https://noaddr.test/hook'), 'noaddr.test has no A or AAAA record');
    t.match(
      await problem('https://servfail.test/hook'),
      /^the DNS server did not answer the A\/AAAA query for servfail\.test \(SERVFAIL\): check that 127\.0\.0\.1:\d+ answers, or set dns\.servers/,
    );
  },
);
