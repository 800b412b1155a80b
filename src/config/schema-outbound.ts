import { DEFAULT_WARMUP_SCHEDULE, scheduleProblem } from '../domain/warmup.js';
import { type KeySpec, k } from './keys.js';
import { readPools } from './pools.js';

/**
 * The [outbound] section's keys (config/schema.ts lists every section): delivery to MX hosts, the
 * queue's retries and throttles, source addresses and their pools.
 */
export const outboundKeys = {
  hold: k(
    { type: 'bool' },
    false,
    "Hold the queue: accept and queue mail but send nothing (like Postfix's defer_transports); set back to false and reload (SIGHUP) to release it",
  ),
  port: k({ type: 'int', min: 1, max: 65535 }, 25, 'TCP port of remote MX hosts (tests point it at a local MX)'),
  concurrency: k(
    { type: 'int', min: 1, max: 10_000 },
    100,
    'Most SMTP connections open at once, all destinations together',
  ),
  concurrency_per_domain: k(
    { type: 'int', min: 1, max: 1000 },
    10,
    'Most SMTP connections open at once to one destination (the mail servers a recipient domain resolves to; gmail.com and googlemail.com are one); fewer while it is throttled; reloadable',
  ),
  limits_scope: k(
    { type: 'enum', values: ['node', 'cluster'] },
    'node',
    'Whose limits concurrency_per_domain, messages_per_minute, destination_limits and the adaptive backoff are: "node", each node\'s own (receivers throttle per sending address, and each node usually has its own); "cluster", all nodes\' together on one PostgreSQL (nodes behind one NAT address), at the cost of a database round trip per destination before connections open',
  ),
  retry_schedule: k(
    { type: 'durations' },
    ['1m', '5m', '15m', '30m', '1h', '2h', '4h'],
    'Delay before each retry after a deferral; the last one repeats',
  ),
  max_queue_time: k(
    { type: 'duration' },
    '72h',
    'A recipient still deferred this long after acceptance bounces as expired',
  ),
  connect_timeout: k({ type: 'duration' }, '30s', 'TCP connect timeout per MX host (then the next host is tried)'),
  greeting_timeout: k({ type: 'duration' }, '5m', 'Wait for the 220 greeting (RFC 5321 4.5.3.2: 5 minutes)'),
  command_timeout: k(
    { type: 'duration' },
    '10m',
    'Inactivity limit for any reply, DATA termination included (RFC 5321 4.5.3.2: up to 10 minutes)',
  ),
  messages_per_connection: k(
    { type: 'int', min: 1, max: 10_000 },
    100,
    'Messages sent over one connection before it is closed; reloadable',
  ),
  messages_per_minute: k(
    { type: 'int', min: 0, max: 1_000_000 },
    0,
    'Most messages started to one destination in any 60 seconds (0: no limit; a destination that refuses with 421 or a rate limit is slowed down whatever this says); reloadable',
  ),
  source_addresses: k(
    { type: 'strings' },
    [],
    "The public addresses (IPv4, IPv6) mail leaves the servers from, every node's: `posthaste dns server` lists them as ip4:/ip6: in the return path domain's SPF record; empty: the addresses of outbound.pools, else a:<server.hostname>",
  ),
  destination_limits: k(
    { type: 'strings' },
    [],
    'Limits for named destinations over the three above, e.g. ["outlook.com connections=5", "google.com per_minute=600"]; a destination is named by its MX hosts\' registrable domain, as `posthaste status` shows it; reloadable',
  ),
  claim_batch: k({ type: 'int', min: 1, max: 100_000 }, 1000, 'Most recipients claimed from the queue at once'),
  poll_interval: k({ type: 'duration' }, '1s', 'How often the queue is checked for due recipients when idle'),
  signing_threads: k(
    { type: 'int', min: 0, max: 64 },
    0,
    'Worker threads composing and DKIM-signing messages; 0 picks the CPU count',
  ),
  chunking: k(
    { type: 'bool' },
    true,
    'Send each message with BDAT (RFC 3030) where the server offers CHUNKING and PIPELINING: the envelope and the message in one write, one round trip a message instead of two; false: always DATA',
  ),
  mta_sts: k({ type: 'bool' }, true, "Honour the recipient domain's MTA-STS policy (RFC 8461)"),
  mta_sts_port: k(
    { type: 'int', min: 1, max: 65535 },
    443,
    'HTTPS port MTA-STS policies are fetched from (tests point it at a local server)',
  ),
  dane: k(
    { type: 'bool' },
    false,
    "DANE (RFC 7672): where a recipient's MX is DNSSEC-signed and publishes TLSA records, TLS is required and the certificate must match them; needs a validating resolver in dns.servers (or the system's) on loopback",
  ),
  tls_ca_file: k(
    { type: 'string' },
    '',
    'PEM file of extra CA certificates trusted when TLS must be valid (MTA-STS, the relay host); empty: the system CAs only',
  ),
  relay: k(
    { type: 'string' },
    '',
    'Send everything through this host instead of direct to MX (for machines that cannot open port 25): "smtp://host:587" (STARTTLS required) or "smtps://host:465" (TLS from the start); the certificate must be valid; empty: direct to MX',
  ),
  relay_user: k({ type: 'string' }, '', 'User name for AUTH PLAIN/LOGIN at the relay host; empty: no AUTH'),
  relay_password_file: k(
    { type: 'string' },
    '',
    'File whose first line is the relay password (or set POSTHASTE_OUTBOUND_RELAY_PASSWORD)',
  ),
  relay_password: k(
    { type: 'string' },
    '',
    'The relay password; set it through the environment (POSTHASTE_OUTBOUND_RELAY_PASSWORD) or relay_password_file rather than here; never printed',
    true,
  ),
  default_pool: k(
    { type: 'string' },
    '',
    'The pool of mail whose message and customer name none; empty: the first of outbound.pools',
  ),
  pools: k(
    { type: 'tables', read: readPools },
    [],
    'Pools of source addresses, written as [[outbound.pools]] tables: name, and addresses = [ { ip, ehlo } ]; each connection binds an address of its pool (by the MX host\'s address family) and says its ehlo name; the addresses must be this node\'s (docs/delivery.md, "Sending identities"); none: the kernel picks, EHLO says server.hostname',
  ),
  warmup_schedule: k(
    { type: 'ints', check: scheduleProblem },
    [...DEFAULT_WARMUP_SCHEDULE],
    'Messages per destination per UTC day an address of outbound.pools with warmup_start may send, by day since that start (element 0: the start day), never going down; past its end the address is at full volume. The default reaches full volume in four weeks (docs/delivery.md, "Warm-up")',
  ),
} satisfies Record<string, KeySpec>;
