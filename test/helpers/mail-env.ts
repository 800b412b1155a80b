import t from 'tap';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';

/**
 * A TestMx on 127.0.0.1 and a loopback DNS server that names it the MX of `domain` (as
 * `mx.<domain>`); both stop when the test file ends.
 */
export async function mxOfDomain(domain: string): Promise<{ dns: TestDnsServer; mx: TestMx }> {
  const dns = await new TestDnsServer().start();
  const mx = await new TestMx('127.0.0.1').start();
  t.teardown(async () => {
    await Promise.all([dns.stop(), mx.stop()]);
  });
  dns.set(domain, { MX: [{ preference: 10, exchange: `mx.${domain}` }] });
  dns.set(`mx.${domain}`, { A: ['127.0.0.1'] });
  return { dns, mx };
}
