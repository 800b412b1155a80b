import ipaddr from 'ipaddr.js';

/**
 * Whether an address is a public unicast address a webhook may reach. Refused: loopback, private
 * (RFC 1918), link-local (169.254/16, which holds cloud metadata endpoints, and fe80::/10), CGNAT
 * (100.64/10), unique-local (fc00::/7), unspecified, multicast, broadcast, reserved, and the
 * special IPv6 ranges. IPv4-mapped and IPv4-compatible IPv6 are judged as the IPv4 they carry.
 * Input is an address as the resolver or the URL parser gives it (the WHATWG URL parser has already
 * turned 0x7f000001 and 2130706433 into 127.0.0.1).
 */
export function isPublicAddress(address: string): boolean {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return false;
  }
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return isPublicAddress(v6.toIPv4Address().toString());
    // ::a.b.c.d (IPv4-compatible, deprecated) and NAT64 64:ff9b::/96 carry an IPv4 address too.
    const parts = v6.parts;
    if (parts.slice(0, 6).every((p) => p === 0)) return false;
    if (parts[0] === 0x64 && parts[1] === 0xff9b && parts.slice(2, 6).every((p) => p === 0))
      return isPublicAddress(`${parts[6]! >> 8}.${parts[6]! & 255}.${parts[7]! >> 8}.${parts[7]! & 255}`);
    return v6.range() === 'unicast';
  }
  return addr.range() === 'unicast';
}

/** Names that mean this machine whatever DNS says. */
export function isLocalName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === 'localhost.localdomain';
}
