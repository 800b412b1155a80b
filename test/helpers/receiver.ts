import { Resolver } from 'node:dns/promises';
import { authenticate } from 'mailauth';
import type { ReceivedMessage } from '../../support/mx-server.js';
import type { Json } from './http.js';

/**
 * What a receiving MX checking with a library that is not ours (mailauth) finds in a message: SPF
 * from the session it saw (client address, EHLO name, MAIL FROM), DKIM and DMARC from the message,
 * every record looked up through the test's DNS server (`dnsServer`, host:port).
 */
export async function receiverCheck(got: ReceivedMessage, dnsServer: string, mta = 'mx.rcpt.test'): Promise<Json> {
  const resolver = new Resolver();
  resolver.setServers([dnsServer]);
  const res = await authenticate(got.data, {
    ip: got.remoteAddress,
    helo: got.helo,
    sender: got.from,
    mta,
    resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT'),
    disableArc: true,
    disableBimi: true,
  } as never);
  return res as unknown as Json;
}

/** receiverCheck's verdicts in short: SPF's result and domain, each DKIM signature, DMARC and what aligned. */
export async function receiverVerdict(got: ReceivedMessage, dnsServer: string): Promise<Json> {
  const r = await receiverCheck(got, dnsServer);
  return {
    spf: r.spf.status.result,
    spfDomain: r.spf.domain,
    dkim: r.dkim.results.map((x: Json) => [x.status.result, x.signingDomain, x.status.aligned]),
    dmarc: r.dmarc.status.result,
    alignedSpf: r.dmarc.alignment?.spf?.result || false,
    alignedDkim: r.dmarc.alignment?.dkim?.result || false,
  };
}
