import { k } from './keys.js';

/**
 * The [tlsrpt] section's keys (config/schema.ts lists every section): SMTP TLS reports (RFC 8460)
 * sent to the recipient domains that ask for them (docs/delivery.md, "TLS reports (RFC 8460)").
 */
export const tlsrptKeys = {
  enabled: k(
    { type: 'bool' },
    true,
    "Count each MX connection's TLS outcome per day and send the day's report to every recipient domain that publishes a TLS-RPT record (_smtp._tls.<domain>), once a day by one node",
  ),
  organization_name: k(
    { type: 'string' },
    '',
    'The organization-name the reports give as their sender; empty: server.hostname',
  ),
  contact_info: k(
    { type: 'string' },
    '',
    'The contact-info the reports give (an address or a URL); empty: postmaster@<server.hostname>',
  ),
  from: k(
    { type: 'string' },
    '',
    "The From address of reports sent by mail (mailto: URIs), on a verified sending domain whose DKIM key signs them; they are queued as that domain's customer's mail. Empty: reports go only to https: URIs",
  ),
  delay: k(
    { type: 'duration' },
    '15m',
    "How long after each UTC midnight the previous day's reports are sent (receivers ask for a little delay, so late sessions are in)",
  ),
};
