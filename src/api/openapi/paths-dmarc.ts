import { dateTime, json, type Obj, pathParameter, ref, responseRef, responses, scoped } from './common.js';
import { timeFilter } from './paths-emails.js';

/** What receivers' DMARC aggregate reports said about a domain (api/routes/domains.ts; docs/api.md, "Domains"). */

const count = (description: string): Obj => ({ type: 'integer', minimum: 0, description });

const DMARC_SOURCE: Obj = {
  type: 'object',
  required: ['day', 'source_ip', 'messages', 'dkim_aligned', 'spf_aligned', 'dmarc_pass', 'reporters', 'ours'],
  properties: {
    day: { type: 'string', format: 'date', description: 'The day (UTC) the reports covered.' },
    source_ip: { type: 'string', description: 'The address the mail came from, as reported.' },
    messages: count('Messages reported from it that day.'),
    dkim_aligned: count('Of them, DKIM aligned.'),
    spf_aligned: count('Of them, SPF aligned.'),
    dmarc_pass: count('Of them, passed DMARC (DKIM or SPF aligned).'),
    reporters: { type: 'array', items: { type: 'string' }, description: 'The receivers that reported it.' },
    ours: { type: 'boolean', description: "One of the addresses the server's SPF record lists." },
  },
};

export const DMARC_SCHEMAS: Obj = {
  DmarcSource: DMARC_SOURCE,
  DmarcSummary: {
    type: 'object',
    required: ['domain', 'since', 'until', 'sources', 'ours_failing', 'others'],
    properties: {
      domain: { type: 'string' },
      since: dateTime('The start of the period (included).'),
      until: dateTime('Its end (excluded).'),
      sources: { type: 'array', items: ref('DmarcSource') },
      ours_failing: count("Mail from the server's own addresses that failed DMARC: a record to fix."),
      others: count('Mail claiming the domain from other addresses: another sender, or a forgery.'),
    },
  },
};

export const DMARC_PATHS: Obj = {
  '/api/v1/domains/{name}/dmarc': {
    parameters: [pathParameter('name', 'The domain name (IDNs in their ASCII form, `xn--…`).')],
    get: {
      operationId: 'getDomainDmarc',
      ...scoped('domains:write'),
      tags: ['domains'],
      summary: "What receivers' DMARC aggregate reports said about the domain",
      description:
        'The reports received at `smtp.dmarc_address` about this domain, summed per day and source address; by default the last 7 days.',
      parameters: [
        timeFilter('since', 'Reports from this time on (default: 7 days before `until`)'),
        timeFilter('until', 'Reports before this time (default: now)'),
      ],
      responses: responses('get', {
        '200': json(ref('DmarcSummary'), 'The summary.'),
        '404': responseRef('NotFound'),
        '422': responseRef('ValidationFailed'),
      }),
    },
  },
};
