import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import * as dnsPacket from 'dns-packet';

/**
 * DNS queries that say whether the answer was DNSSEC-validated: the AD bit of a validating
 * resolver's reply (RFC 4035 3.2.3; asked for with AD in the query, RFC 6840 5.7). Node's resolver
 * does not expose that bit, so these go as raw packets (dns-packet) to the same `dns.servers`,
 * over UDP, and again over TCP when the answer is truncated. The AD bit is only as trustworthy as
 * the path to the resolver: a validating resolver on loopback (docs/delivery.md, DANE).
 */
export interface SecureAnswer {
  rcode: string;
  /** The resolver validated the answer (or the denial) with DNSSEC. */
  secure: boolean;
  answers: dnsPacket.Answer[];
}

/** A query that got no usable reply from any server (timeout, refused connection, malformed reply). */
export class DnsQueryError extends Error {
  override readonly name = 'DnsQueryError';
}

/** "ip", "ip:port", "[v6]:port" or a bare v6 address, as Resolver.getServers() gives them. */
export function parseServer(s: string): { host: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (v6) return { host: v6[1]!, port: Number(v6[2] ?? 53) };
  if (net.isIPv6(s)) return { host: s, port: 53 };
  const [host, port] = s.split(':');
  return { host: host!, port: Number(port ?? 53) };
}

/** Whether every server is on this machine, the one path on which a resolver's AD bit can be trusted. */
export function allLoopback(servers: string[]): boolean {
  return servers.every((s) => {
    const { host } = parseServer(s);
    return host === '::1' || (net.isIPv4(host) && host.startsWith('127.'));
  });
}

export async function querySecure(
  servers: string[],
  name: string,
  type: dnsPacket.RecordType,
  timeoutMs = 5000,
): Promise<SecureAnswer> {
  const id = randomInt(0, 65536);
  const packet = dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED | dnsPacket.AUTHENTIC_DATA,
    questions: [{ type, name }],
    additionals: [
      {
        type: 'OPT',
        name: '.',
        udpPayloadSize: 1232,
        extendedRcode: 0,
        ednsVersion: 0,
        flags: 0,
        flag_do: false,
        options: [],
      },
    ],
  });
  let last: Error = new DnsQueryError(`${name} ${type}: no DNS server to ask`);
  for (const server of servers) {
    const { host, port } = parseServer(server);
    try {
      let reply = await overUdp(host, port, packet, id, timeoutMs);
      if (reply.flag_tc) reply = await overTcp(host, port, packet, id, timeoutMs);
      const q = reply.questions?.[0];
      if (!q || q.name.toLowerCase() !== name.toLowerCase() || q.type !== type)
        throw new DnsQueryError(`${name} ${type}: the reply is for another question`);
      return { rcode: reply.rcode ?? 'NOERROR', secure: reply.flag_ad, answers: reply.answers ?? [] };
    } catch (e) {
      last = e instanceof DnsQueryError ? e : new DnsQueryError(`${name} ${type}: ${(e as Error).message}`);
    }
  }
  throw last;
}

type Reply = dnsPacket.DecodedPacket & { rcode?: string };

function overUdp(host: string, port: number, packet: Buffer, id: number, timeoutMs: number): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
    const done = (e: Error | null, reply?: Reply) => {
      clearTimeout(timer);
      socket.close();
      if (e) reject(e);
      else resolve(reply!);
    };
    const timer = setTimeout(
      () => done(new DnsQueryError(`${host}:${port} did not answer in ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on('error', (e) => done(e));
    socket.on('message', (msg, from) => {
      if (from.port !== port || from.address !== host) return;
      let reply: Reply;
      try {
        reply = dnsPacket.decode(msg) as Reply;
      } catch {
        return; // not an answer to us; wait for one
      }
      if (reply.id === id && reply.type === 'response') done(null, reply);
    });
    socket.send(packet, port, host);
  });
}

function overTcp(host: string, port: number, packet: Buffer, id: number, timeoutMs: number): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let buffered = Buffer.alloc(0);
    const done = (e: Error | null, reply?: Reply) => {
      socket.destroy();
      if (e) reject(e);
      else resolve(reply!);
    };
    socket.setTimeout(timeoutMs, () =>
      done(new DnsQueryError(`${host}:${port} did not answer over TCP in ${timeoutMs} ms`)),
    );
    socket.on('error', (e) => done(e));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 2 || buffered.length < 2 + buffered.readUInt16BE(0)) return;
      try {
        const reply = dnsPacket.decode(buffered.subarray(2, 2 + buffered.readUInt16BE(0))) as Reply;
        done(reply.id === id ? null : new DnsQueryError('the TCP reply has another id'), reply);
      } catch (e) {
        done(e as Error);
      }
    });
    socket.on('end', () => done(new DnsQueryError(`${host}:${port} closed the TCP connection without an answer`)));
    const length = Buffer.alloc(2);
    length.writeUInt16BE(packet.length);
    socket.write(Buffer.concat([length, packet]));
  });
}
