import { EVENT_TYPES } from '../../domain/events.js';
import { type Obj, ref } from './common.js';
import { eventSchemaName } from './events.js';

/**
 * The OpenAPI 3.1 `webhooks:` section: how each event (events.ts) is POSTed to an endpoint
 * (Standard Webhooks: docs/api.md, Webhook endpoints).
 */

const header = (name: string, description: string, schema: Obj): Obj => ({
  name,
  in: 'header',
  required: true,
  description,
  schema,
});

/** The `webhooks:` section: one POST per event type, as an endpoint receives it. */
export function webhookSection(): Obj {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          operationId: `on${eventSchemaName(type)}`,
          summary: `The \`${type}\` event, POSTed to each enabled endpoint that subscribes to it`,
          description:
            "Sent with Standard Webhooks headers: verify `webhook-signature` over `<webhook-id>.<webhook-timestamp>.<body as received>` with the endpoint's secret before trusting the body, and use `webhook-id` to drop repeats (delivery is at least once). Content-Type `application/json`; User-Agent `posthaste/<version>`.",
          security: [],
          parameters: [
            header('webhook-id', 'The event id (`id` of the body): the same on every retry and replay.', {
              type: 'string',
              pattern: '^msg_[0-9A-Za-z]+$',
            }),
            header('webhook-timestamp', 'Seconds since the Unix epoch when this attempt was signed.', {
              type: 'string',
              pattern: '^[0-9]+$',
            }),
            header(
              'webhook-signature',
              '`v1,` and the Base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed by the Base64-decoded part of the secret after `whsec_`.',
              {
                type: 'string',
                pattern: '^v1,[A-Za-z0-9+/]{43}=$',
              },
            ),
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref(eventSchemaName(type)) } } },
          responses: {
            '2XX': {
              description:
                'Received. Any 2xx within webhooks.timeout (default 10 s) is success; the body is not read beyond 1 KiB.',
            },
            '410': {
              description:
                'Gone: the endpoint is disabled (`enabled: false`, `disabled_reason`) and gets nothing more.',
            },
            default: {
              description:
                'Anything else, a redirect, a timeout or a connection error is a failure: retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (8 attempts), then the delivery is `failed`.',
            },
          },
        },
      },
    ]),
  );
}
