import type { ClusterNode } from '../cluster/node.js';
import type { Scheduler } from '../outbound/scheduler.js';
import type { Store } from '../store/store.js';
import type { Dispatcher } from '../webhooks/dispatcher.js';
import type { Ctx } from './context.js';

/** The background loops and the wakeups from other nodes, running. */
export interface Loops {
  abort: AbortController;
  delivery: Promise<void>;
  dispatching: Promise<void>;
  wakeups: { close(): Promise<void> };
}

/** Step: the loops start once every listener is bound: a start that fails has delivered nothing. */
export async function startLoops(
  { log }: Ctx,
  store: Store,
  node: ClusterNode,
  { scheduler, dispatcher }: { scheduler: Scheduler; dispatcher: Dispatcher },
  manualDelivery: boolean,
): Promise<Loops> {
  const abort = new AbortController();
  const delivery = manualDelivery ? Promise.resolve() : scheduler.run(abort.signal);
  const dispatching = manualDelivery ? Promise.resolve() : dispatcher.run(abort.signal);
  // What the other nodes queue: looked at now rather than at the next poll.
  const wakeups = await store.wakeups.listen(
    node.id,
    (kind) => (kind === 'outbound' ? scheduler.kick() : dispatcher.kickForEvents()),
    {
      // Every loss and every failed attempt, each on a line of its own (as often as the attempts:
      // a wait that doubles up to 30 s), and the return: polling alone is slow, and says nothing.
      lost: (e, { attempt, inMs }) =>
        attempt === 0
          ? log.warn(
              { err: e.message, retry_in_ms: inMs },
              'wakeups from other nodes lost (LISTEN connection); polling meanwhile, reconnecting',
            )
          : log.error(
              { err: e.message, attempt, retry_in_ms: inMs },
              'wakeups from other nodes still lost: the LISTEN connection could not be opened again; polling meanwhile',
            ),
      back: (attempts) =>
        log.info({ failed_attempts: attempts }, 'wakeups from other nodes heard again (LISTEN connection back)'),
    },
  );
  return { abort, delivery, dispatching, wakeups };
}
