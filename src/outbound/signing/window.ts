import type { Outcome } from '../../domain/outcome.js';
import type { Claimed, QueuedMessage } from '../../store/model.js';

/** Messages composed and signed ahead of the one being sent, per connection. */
const SIGN_AHEAD = 4;

/** A message ready to send (its signed bytes), or the outcome for its recipients when it is not. */
export type Prepared = Buffer | Outcome;

/** An item of the group: a recipient and its message. */
export interface WindowItem {
  message: QueuedMessage;
  recipient: Pick<Claimed, 'id'>;
}

/**
 * The messages of one group, composed and signed on the signing threads a few ahead of the one
 * being sent, so that signing overlaps sending. Only a window is signed ahead, not the whole
 * group: every connection's group signed at once held a thousand messages, twice over, in memory
 * (measured: 440 MiB peak draining 20,000 messages). A message's signed bytes are let go after
 * its last recipient in the group is sent to, not kept until the whole group is done.
 *
 * What is signed once is a unit: a message, shared by its recipients here, or, for a message
 * with fields of each recipient's own (the List-Unsubscribe fields, `perRecipient`), one
 * recipient's copy.
 */
export class SigningWindow {
  /** One promise per unit, however many of its recipients are here. */
  private readonly signing = new Map<string, Promise<Prepared>>();
  /** Items left to send per unit (a message can have several recipients at one domain). */
  private readonly left = new Map<string, number>();
  /** How many of the group's items have had their unit's signing started. */
  private ahead = 0;

  constructor(
    private readonly items: readonly WindowItem[],
    private readonly prepare: (item: WindowItem) => Promise<Prepared>,
    private readonly perRecipient: (message: QueuedMessage) => boolean = () => false,
  ) {
    for (const item of items) this.left.set(this.unit(item), (this.left.get(this.unit(item)) ?? 0) + 1);
  }

  private unit(item: WindowItem): string {
    return this.perRecipient(item.message) ? `r${item.recipient.id}` : `m${item.message.id}`;
  }

  /** The message of items[at], once prepared; signing of the SIGN_AHEAD items after it is started too. */
  signedFor(at: number): Promise<Prepared> {
    for (const end = Math.min(this.items.length, at + SIGN_AHEAD + 1); this.ahead < end; this.ahead++) {
      const item = this.items[this.ahead]!;
      const unit = this.unit(item);
      if (!this.signing.has(unit)) {
        const p = this.prepare(item);
        // Signed ahead: one the group never comes to (it failed first, the store away) must not
        // reject unheard, which would end the process; the one waited for still throws.
        p.catch(() => undefined);
        this.signing.set(unit, p);
      }
    }
    return this.signing.get(this.unit(this.items[at]!))!;
  }

  /** `item` is taken to be sent: after its unit's last recipient, the window lets go of the message. */
  sent(item: WindowItem): void {
    const unit = this.unit(item);
    const n = this.left.get(unit)! - 1;
    this.left.set(unit, n);
    if (n === 0) this.signing.delete(unit);
  }
}
