import { UnsendableMessage } from '../domain/errors.js';
import { reply } from '../domain/outcome.js';
import { unsubscribeFields, unsubscribeToken } from '../domain/unsubscribe.js';
import type { Logger } from '../lib/logger.js';
import type { QueuedMessage } from '../store/model.js';
import type { Store } from '../store/store.js';
import type { Signed, SignInput } from './signing/signer.js';
import type { Prepared, WindowItem } from './signing/window.js';

/** What preparing a group's messages takes (a part of deliver.ts's PrepareDeps). */
export interface PrepareDeps {
  store: Pick<Store, 'domains' | 'customers'>;
  /** Composes (first time) and DKIM-signs; a SignerPool in the daemon. */
  sign: (input: SignInput) => Promise<Signed>;
  log: Logger;
  returnPathDomain: string;
  /** The one-click unsubscribe's base URL (unsubscribe.public_url; empty: none) and the secret its tokens are made with. */
  unsubscribe: { publicUrl: string; secret: Buffer };
}

/** The sender domains (their keys) a group signs with, each read once for the group. */
export type SenderDomains = Map<string, ReturnType<PrepareDeps['store']['domains']['find']>>;

/** What the items of one group share while they are prepared. */
export interface GroupSigning {
  /** Messages composed for the first time (stored with the outcomes). */
  composed: Map<number, Buffer>;
  senders: SenderDomains;
  /** A message being composed by its first recipient's signing: the others wait and sign its bytes, never composing again. */
  composing: Map<number, Promise<unknown>>;
  /** Whether a message carries the List-Unsubscribe fields: its send asked, or its customer's default (docs/delivery.md). */
  unsubscribe: (m: QueuedMessage) => boolean;
}

/** The customers of these items whose mail carries the List-Unsubscribe fields by default, read once for the group. */
export async function unsubscribeDefaults(
  deps: Pick<PrepareDeps, 'store'>,
  items: readonly WindowItem[],
): Promise<Set<number>> {
  const on = new Set<number>();
  for (const id of new Set(items.map((i) => i.message.customerId)))
    if (await deps.store.customers.unsubscribeDefault(id)) on.add(id);
  return on;
}

/**
 * Step: compose (a send request's first time only; a submitted message is signed as it is) and
 * DKIM-sign with the sender domain's key; for a message with the List-Unsubscribe fields, one
 * signed copy per recipient, the fields (its own token) before the message's own and signed with them.
 */
export async function prepare(deps: PrepareDeps, item: WindowItem, g: GroupSigning): Promise<Prepared> {
  const m = item.message;
  let found = g.senders.get(m.senderDomain);
  if (!found) g.senders.set(m.senderDomain, (found = deps.store.domains.find(m.senderDomain)));
  const domain = await found;
  if (!domain || domain.customer_id !== m.customerId)
    return {
      kind: 'bounced',
      bounceType: 'hard',
      reply: reply(550, '5.7.0', `sender domain ${m.senderDomain} was removed; the message cannot be signed`, 'policy'),
      suppress: false,
    };
  let fields: string | undefined;
  if (g.unsubscribe(m)) {
    if (!deps.unsubscribe.publicUrl)
      return {
        kind: 'deferred',
        reply: reply(
          451,
          '4.3.0',
          'unsubscribe.public_url is not configured: not sent without List-Unsubscribe',
          'other',
        ),
      };
    const token = unsubscribeToken(deps.unsubscribe.secret, item.recipient.id);
    fields = unsubscribeFields(deps.unsubscribe.publicUrl, token, deps.returnPathDomain);
    // Another recipient's signing is composing this message now: its bytes are signed here too.
    const first = g.composing.get(m.id);
    if (!m.raw && first) await first.catch(() => undefined);
  }
  try {
    const signing = deps
      .sign({
        request: m.request,
        format: m.requestFormat,
        messageId: m.messageId,
        createdAt: m.createdAt,
        raw: m.raw ?? g.composed.get(m.id) ?? null,
        key: { domain: domain.name, selector: domain.dkim_selector, privateKey: domain.dkim_private_key },
        ...(fields ? { fields } : {}),
      })
      .then((out) => {
        // Kept before anyone waiting for this composition goes on.
        if (out.raw) g.composed.set(m.id, out.raw);
        return out;
      });
    if (fields && !m.raw && !g.composed.has(m.id) && !g.composing.has(m.id)) g.composing.set(m.id, signing);
    return (await signing).signed;
  } catch (e) {
    return notSigned(deps, m, e);
  }
}

/** Composing or signing failed: the message cannot be sent as it stands (failed now), or a fault on our side (retried). */
function notSigned(deps: PrepareDeps, m: QueuedMessage, e: unknown): Prepared {
  if (e instanceof UnsendableMessage) {
    // It will never compose or validate as it stands: fail it now rather than retry until it
    // expires. 'policy' blames the message, not the address, so nobody is suppressed.
    deps.log.warn(
      { message_id: m.messageId, err: e.message },
      'message cannot be sent as it stands; failed without retrying',
    );
    return {
      kind: 'bounced',
      bounceType: 'hard',
      reply: reply(554, '5.6.0', `the message was not sent: ${e.message}`, 'policy'),
      suppress: false,
    };
  }
  // Composing or signing failed otherwise: a fault on our side, so retry later rather than bounce.
  deps.log.error({ message_id: m.messageId, err: (e as Error).message }, 'composing or signing failed');
  return {
    kind: 'deferred',
    reply: reply(451, '4.3.0', `local error while preparing the message: ${(e as Error).message}`, 'other'),
  };
}
