import t, { type Test } from 'tap';
import { TestDnsServer, type ZoneRecords } from '../../support/dns-server.js';
import { TestMx } from '../../support/mx-server.js';
import { makeDomain, makeKey, type StartOptions, startTestServer, type TestServer } from './env.js';

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

export interface MailEnv extends TestServer {
  dns: TestDnsServer;
  mx: TestMx;
  /** A production API key of the default customer. */
  key: string;
  /**
   * Stops it all now rather than when the scope ends (the teardown then has nothing left to do):
   * for a test that runs one daemon after another within a single subtest.
   */
  stop(): Promise<void>;
}

export interface MailEnvOptions {
  /** Domains whose MX is the loopback MX (each as `mx.<domain>`, at the MX's address). */
  mxDomains?: string[];
  /** More records, in the zone before the daemon starts (what it looks up at start). */
  zone?: Record<string, ZoneRecords>;
  /**
   * The MX's loopback address (127.0.0.1 unless given) and its certificate (smtp-server's
   * self-signed one unless given): for a test that needs an MX with a certificate from the test CA.
   */
  mx?: { host?: string; tls?: { key: Buffer; cert: Buffer } };
  /**
   * The test whose end stops it all (the whole file unless given): a subtest that starts a daemon
   * of its own stops it when it ends, before the next subtest starts another.
   */
  scope?: Test;
  /** More `[outbound]` lines, after the MX's port. */
  outbound?: string;
  /** More TOML sections, after `[outbound]`. */
  toml?: string;
  /** Sending domains of the default customer, added verified (example.com unless given). */
  domains?: string[];
  /** The daemon's options (startTestServer's); delivery is manual unless `manualDelivery: false`. */
  daemon?: Omit<StartOptions, 'dns'>;
}

/**
 * What most integration tests start with: a loopback DNS server, a TestMx (on 127.0.0.1 unless
 * `mx` says otherwise) that it names the MX of `mxDomains`, a daemon (startTestServer) that
 * delivers to it and resolves through it, a production key and verified sending domains. All of it
 * stops when the test file (or `scope`) ends, or earlier at `stop()`.
 */
export async function startMailEnv(opts: MailEnvOptions = {}): Promise<MailEnv> {
  const dns = await new TestDnsServer().start();
  const mx = await new TestMx(opts.mx?.host ?? '127.0.0.1', opts.mx?.tls).start();
  for (const domain of opts.mxDomains ?? []) {
    dns.set(domain, { MX: [{ preference: 10, exchange: `mx.${domain}` }] });
    dns.set(`mx.${domain}`, { A: [mx.host] });
  }
  for (const [name, records] of Object.entries(opts.zone ?? {})) dns.set(name, records);
  let s: TestServer;
  try {
    s = await startTestServer(`[outbound]\nport = ${mx.port}\n${opts.outbound ?? ''}${opts.toml ?? ''}`, {
      manualDelivery: true,
      ...opts.daemon,
      dns: dns.server,
    });
  } catch (e) {
    await Promise.all([dns.stop(), mx.stop()]);
    throw e;
  }
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await s.close();
      await Promise.all([dns.stop(), mx.stop()]);
    })());
  (opts.scope ?? t).teardown(stop);
  const key = await makeKey(s.store);
  for (const domain of opts.domains ?? ['example.com']) await makeDomain(s.store, domain);
  return Object.assign(s, { dns, mx, key, stop });
}
