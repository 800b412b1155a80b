import { hostname } from 'node:os';

import { k, type Schema, type ValueOf } from './keys.js';
import { outboundKeys } from './schema-outbound.js';
import { tlsrptKeys } from './schema-tlsrpt.js';

/**
 * The configuration schema: every key's type, default and one-line description in one place
 * (what a key may be: keys.ts). `config/posthaste.example.toml` is checked against this by a test.
 */

/** A send quota's default (domain/quotas.ts): recipients accepted in a window, 0 for none. */
const [LIVE, SANDBOX, SET] = [
  "a customer's production keys",
  "a customer's sandbox keys",
  'per customer with "customers set"',
];
const sendQuota = (whose: string, per: string, more: string) =>
  k(
    { type: 'int', min: 0, max: 1_000_000_000 },
    0,
    `Recipients ${whose} may have accepted ${per} (0: no limit); ${more}`,
  );

export const schema = {
  server: {
    hostname: k(
      { type: 'string' },
      hostname(),
      'EHLO name and Message-ID fallback domain; should have a matching PTR record',
    ),
    data_dir: k(
      { type: 'string' },
      '/var/lib/posthaste',
      'Directory holding the SQLite file (posthaste.db); relative paths are relative to the working directory',
    ),
    node_name: k(
      { type: 'string' },
      hostname(),
      "This node's name in status, the dashboard, log lines and /metrics (several nodes on one PostgreSQL: docs/cluster.md); not the EHLO name, which is server.hostname",
    ),
  },
  store: {
    url: k(
      { type: 'store_url' },
      '',
      'Where the store is: empty, the SQLite file posthaste.db in server.data_dir (one node); "postgresql://user@host:5432/dbname" (or postgres://), PostgreSQL, for one node or several on one database (docs/operations.md, "PostgreSQL")',
    ),
    password_file: k(
      { type: 'string' },
      '',
      'A file whose first line is the PostgreSQL password, so the URL need not hold it (PGPASSWORD and ~/.pgpass work too, as for psql)',
    ),
    pool_size: k({ type: 'int', min: 2, max: 500 }, 10, 'PostgreSQL connections this process opens at most'),
  },
  cluster: {
    lease: k(
      { type: 'duration' },
      '30s',
      'A node that has not heartbeaten in the store for this long is dead: any node releases its claims (recipients, webhook deliveries) for the others to deliver; it heartbeats every sixth of it (docs/cluster.md)',
    ),
  },
  api: {
    listen: k({ type: 'listen' }, '127.0.0.1:8025', 'HTTP API address, "host:port"'),
    'tls.cert': k({ type: 'string' }, '', 'PEM certificate file for HTTPS on the API; empty serves plain HTTP'),
    'tls.key': k({ type: 'string' }, '', 'PEM private key file for HTTPS on the API'),
    trusted_proxies: k(
      { type: 'strings' },
      [],
      "Reverse proxies (addresses or CIDR blocks) whose X-Forwarded-For gives the client address the API sees (a key's allowed_cidrs); from any other peer the header is ignored. Empty: the peer is the client",
    ),
  },
  dashboard: {
    listen: k(
      { type: 'listen', optional: true },
      '127.0.0.1:8026',
      'Dashboard address, "host:port", on its own listener so the admin UI is not exposed where the API is; empty turns the dashboard off',
    ),
    public_url: k(
      { type: 'string' },
      '',
      'The URL users reach the dashboard at, when it is behind a reverse proxy (e.g. "https://mail.example.com"); https makes cookies Secure with the __Host- prefix; empty: the listener\'s own address',
    ),
    session_idle: k({ type: 'duration' }, '30m', 'A dashboard session unused this long ends; the user logs in again'),
  },
  smtp: {
    listen: k({ type: 'listen' }, '0.0.0.0:25', 'Inbound SMTP address, "host:port"'),
    return_path_domain: k(
      { type: 'string' },
      '',
      'Domain of the per-recipient return path bounces+<token>@<domain>; empty uses server.hostname',
    ),
    return_path_label: k(
      { type: 'string' },
      'bounces',
      'Label of each sending domain\'s own return path, <label>.<domain>, a CNAME to the return path domain: once verification finds it, that domain\'s envelope sender is bounces+<token>@<label>.<domain> (docs/delivery.md, "Sending identities")',
    ),
    feedback_address: k({ type: 'string' }, '', 'Address ARF spam-complaint reports are sent to; empty accepts none'),
    dmarc_address: k(
      { type: 'string' },
      '',
      'Address DMARC aggregate reports are sent to (the rua= of the sending domains\' DMARC records): read and kept per domain and day (docs/operations.md, "DMARC reports"); empty accepts none',
    ),
    max_message_bytes: k(
      { type: 'bytes' },
      25 * 1024 * 1024,
      'Largest inbound message (advertised with SIZE; larger is refused with 552)',
    ),
    max_recipients: k(
      { type: 'int', min: 1, max: 1000 },
      100,
      'Most recipients in one inbound transaction (more get 452)',
    ),
    socket_timeout: k(
      { type: 'duration' },
      '5m',
      'Idle time before an inbound connection is closed (RFC 5321 4.5.3.2: at least 5 minutes)',
    ),
    max_clients: k({ type: 'int', min: 1, max: 100_000 }, 500, 'Most inbound connections at once'),
    'tls.cert': k(
      { type: 'string' },
      '',
      'PEM certificate file for STARTTLS on the inbound listener; empty: no STARTTLS',
    ),
    'tls.key': k({ type: 'string' }, '', 'PEM private key file for STARTTLS'),
  },
  submission: {
    listen: k(
      { type: 'listen', optional: true },
      '',
      'SMTP submission for applications, "host:port" (port 587 on the Internet): STARTTLS, then AUTH PLAIN or LOGIN with an API key as the password; empty: off (docs/submission.md)',
    ),
    listen_tls: k(
      { type: 'listen', optional: true },
      '',
      'SMTP submission over implicit TLS (RFC 8314), "host:port" (port 465 on the Internet): TLS from the first byte, then AUTH; needs tls.cert and tls.key; empty: off',
    ),
    'tls.cert': k(
      { type: 'string' },
      '',
      'PEM certificate file for submission (STARTTLS on listen, TLS on listen_tls); needed unless listen is on loopback with allow_plaintext_auth_on_loopback; reloadable',
    ),
    'tls.key': k({ type: 'string' }, '', 'PEM private key file for submission; reloadable'),
    allow_plaintext_auth_on_loopback: k(
      { type: 'bool' },
      false,
      'Take AUTH without TLS from clients on loopback (127.0.0.0/8, ::1): for applications on the same machine, and development; elsewhere AUTH needs TLS',
    ),
    max_clients: k(
      { type: 'int', min: 1, max: 100_000 },
      500,
      'Most submission connections at once, on each of the two listeners',
    ),
    socket_timeout: k({ type: 'duration' }, '5m', 'Idle time before a submission connection is closed'),
  },
  outbound: outboundKeys,
  dns: {
    servers: k({ type: 'strings' }, [], 'DNS servers as "ip" or "ip:port"; empty uses the system resolver'),
    recheck_interval: k(
      { type: 'duration' },
      '6h',
      "How often verified domains' records are checked again (one node of a cluster does it); 0 turns it off",
    ),
  },
  doctor: {
    dnsbl: k(
      { type: 'strings' },
      [],
      'DNS blocklist zones `posthaste doctor` (and its hourly run) looks each source address up in, e.g. ["zen.spamhaus.org"]; queried through dns.servers, which must be a resolver of your own, as the lists refuse public ones (docs/operations.md, "Deliverability")',
    ),
    interval: k(
      { type: 'duration' },
      '1h',
      'How often the daemon runs the doctor (the first run 10 s after start, or sooner when this is shorter); "0s": never by itself, only `posthaste doctor`',
    ),
  },
  webhooks: {
    allow_private_targets: k(
      { type: 'bool' },
      false,
      'Allow webhook URLs on private/loopback addresses and plain http (development and tests only)',
    ),
    timeout: k({ type: 'duration' }, '10s', 'A webhook attempt that has not answered 2xx in this time has failed'),
    tls_ca_file: k(
      { type: 'string' },
      '',
      'PEM file of extra CA certificates trusted for webhook https (private PKI, tests); empty: the system CAs',
    ),
    concurrency: k({ type: 'int', min: 1, max: 10_000 }, 50, 'Most webhook requests in flight at once'),
    concurrency_per_endpoint: k(
      { type: 'int', min: 1, max: 1000 },
      4,
      'Most requests in flight to one endpoint, so a slow endpoint cannot hold up the others',
    ),
    poll_interval: k({ type: 'duration' }, '1s', 'How often the outbox is checked when idle'),
    secret_grace: k(
      { type: 'duration' },
      '24h',
      "After an endpoint's secret is rotated, how long deliveries are signed with the old secret too",
    ),
  },
  bounces: {
    suppress_mailbox_full: k(
      { type: 'bool' },
      false,
      'Suppress an address on a permanent "mailbox full" (an abandoned mailbox stays full; most fill and empty again); reloadable',
    ),
    suppress_disabled: k(
      { type: 'bool' },
      false,
      'Suppress an address on a permanent "account disabled" (Gmail disables inactive accounts before deleting them; others suspend for a while); reloadable',
    ),
  },
  inbound: {
    rate_per_minute: k(
      { type: 'int', min: 0, max: 1_000_000 },
      600,
      'Messages a receiving domain may receive per minute (0: no limit); per domain with "domains limits"',
    ),
    monthly_limit: k(
      { type: 'int', min: 0, max: 1_000_000_000 },
      0,
      'Messages a receiving domain may receive per calendar month, UTC (0: no limit)',
    ),
  },
  limits: {
    max_message_bytes: k(
      { type: 'bytes' },
      25 * 1024 * 1024,
      'Largest accepted message, encoded (MIME), in bytes or with a unit such as "25MiB"',
    ),
    max_recipients: k({ type: 'int', min: 1, max: 1000 }, 50, 'Most recipients (to + cc + bcc) in one send request'),
    idempotency_ttl: k({ type: 'duration' }, '24h', 'How long an Idempotency-Key replays its first response'),
    send_per_minute: sendQuota(LIVE, 'per minute', SET),
    send_per_day: sendQuota(LIVE, 'per day, UTC', SET),
    send_per_month: sendQuota(LIVE, 'per calendar month, UTC', SET),
    sandbox_send_per_minute: sendQuota(SANDBOX, 'per minute', 'counted apart from its production keys'),
    sandbox_send_per_day: sendQuota(SANDBOX, 'per day, UTC', 'counted apart'),
    sandbox_send_per_month: sendQuota(SANDBOX, 'per calendar month, UTC', 'counted apart'),
    max_schedule_ahead: k({ type: 'duration' }, '30d', 'How far ahead scheduled_at may be'),
    message_memory: k(
      { type: 'bytes' },
      32 * 1024 * 1024,
      'Bytes of large messages (API request bodies and inbound DATA past 64 KiB, inbound messages being shown) held in memory at once; past it, the next one waits its turn with its sender held back, and the oldest always goes on, so memory stays near this plus one message',
    ),
    max_store_bytes: k(
      { type: 'int', min: 0, max: Number.MAX_SAFE_INTEGER },
      0,
      'Cap on the SQLite file in bytes (0: none); at the cap the API answers 503 and SMTP 452 4.3.1, as on a full disk',
    ),
  },
  retention: {
    days: k(
      { type: 'int', min: 0, max: 36_500 },
      30,
      'Purge bodies of finished messages and webhook attempt logs older than this (0: keep forever)',
    ),
    schedule: k({ type: 'string' }, '17 * * * *', 'When the retention job runs (cron syntax, node-cron)'),
  },
  reputation: {
    window: k(
      { type: 'duration' },
      '7d',
      'The rolling window a customer\'s bounce and complaint rates are counted over (docs/operations.md, "Reputation")',
    ),
    min_recipients: k(
      { type: 'int', min: 1, max: 1_000_000 },
      200,
      'Recipients with an outcome in the window before its rates are judged at all',
    ),
    warning_bounce_rate: k(
      { type: 'percent' },
      '4%',
      'Hard bounces over recipients with an outcome at which a customer is warned (customer.warning)',
    ),
    warning_complaint_rate: k(
      { type: 'percent' },
      '0.08%',
      'Complaints over recipients delivered at which a customer is warned',
    ),
    pause_bounce_rate: k(
      { type: 'percent' },
      '8%',
      "Bounce rate at which a customer's sending is paused (customer.paused) until an administrator resumes it",
    ),
    pause_complaint_rate: k({ type: 'percent' }, '0.3%', "Complaint rate at which a customer's sending is paused"),
    check_interval: k(
      { type: 'duration' },
      '2s',
      'How often one node judges the rates of the customers whose counters moved (0: never; pausing by hand still works)',
    ),
  },
  tlsrpt: tlsrptKeys,
  metrics: {
    enabled: k({ type: 'bool' }, false, 'Serve Prometheus metrics at GET /metrics (no key needed), on metrics.listen'),
    listen: k(
      { type: 'listen', optional: true },
      '127.0.0.1:9464',
      'Address of the metrics listener, "host:port", apart from the API that applications reach; empty serves /metrics on the API listener instead',
    ),
  },
  unsubscribe: {
    listen: k(
      { type: 'listen', optional: true },
      '',
      'Address of the one-click unsubscribe listener (RFC 8058), "host:port", on its own so the API may stay private; empty turns it off',
    ),
    public_url: k(
      { type: 'string' },
      '',
      'The https base URL mailbox providers reach the unsubscribe listener at (e.g. "https://unsubscribe.example.com"); links are <public_url>/u/<token>; empty: sends asking for unsubscribe headers are refused',
    ),
  },
  log: {
    level: k(
      { type: 'enum', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
      'info',
      'Log level (JSON lines on stdout)',
    ),
  },
} satisfies Schema;

/** The merged, validated configuration; durations are milliseconds, sizes bytes. */
export type Config = {
  [S in keyof typeof schema]: {
    [Key in keyof (typeof schema)[S]]: (typeof schema)[S][Key] extends { kind: infer K } ? ValueOf<K> : never;
  };
};
