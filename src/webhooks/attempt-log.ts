import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { AttemptBatch, SettledAttempt } from '../store/model.js';
import type { FanOut } from './fanout.js';

/** Attempts recorded per transaction at most; a batch this full is written at once. */
const FLUSH_BATCH = 256;

export interface AttemptLogDeps {
  clock: Clock;
  log: Logger;
  fanOut: FanOut;
  /** Commits one batch (the daemon: the group-commit writer, so the fsync is off the event loop). */
  record: (input: AttemptBatch) => Promise<boolean>;
  /** A batch is written at the latest this long after its first attempt (ms). */
  flushInterval: number;
  /** Counts attempts by outcome once recorded (Prometheus). */
  onAttempt?: (outcome: 'success' | 'failure' | 'gone', durationMs: number) => void;
}

/**
 * The batched attempt log: finished attempts wait here a few milliseconds and are committed
 * together, with the fan-out's pending rows and cursor. Webhooks are at-least-once and receivers
 * dedupe on webhook-id, so recording an attempt a little later (so many share one commit) risks at
 * worst a duplicate after a crash. A batch that fails to commit (disk full) is kept and tried again.
 */
export class AttemptLog {
  /** Finished attempts, with what each decided, for the next batch. */
  private settled: SettledAttempt[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** Batches committing now. */
  private readonly writing = new Set<Promise<void>>();

  constructor(private readonly deps: AttemptLogDeps) {}

  /** A finished attempt; `now`: write without waiting for others to group it with. */
  add(attempt: SettledAttempt, now: boolean): void {
    this.settled.push(attempt);
    if (now || this.settled.length >= FLUSH_BATCH) void this.flush();
    else this.schedule();
  }

  /** A batch soon (within the flush interval), if none is due already. */
  schedule(): void {
    this.timer ??= setTimeout(() => void this.flush(), this.deps.flushInterval);
  }

  /** Writes what is waiting and waits for every batch under way. */
  async settle(): Promise<void> {
    await this.flush();
    await Promise.all(this.writing);
  }

  /** At stop, after `settle`: no timer left behind. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Records the finished attempts so far in one transaction, with what the fan-out has to write. */
  flush(): Promise<void> {
    this.stop();
    const batch = this.settled;
    const fanOut = this.deps.fanOut.forBatch(batch);
    if (!fanOut) return Promise.resolve();
    this.settled = [];
    const { clock, log } = this.deps;
    const p = this.deps
      .record({
        batch,
        pending: fanOut.pending,
        cursor: fanOut.cursor,
        now: clock.now(),
        ...(fanOut.epoch !== undefined ? { epoch: fanOut.epoch } : {}),
      })
      .then((ok) => {
        if (ok) this.deps.fanOut.recorded(fanOut);
        else {
          log.warn(
            { attempts: batch.length },
            'webhooks: another node leads the fan-out now; this one stops fanning out',
          );
          this.deps.fanOut.refused();
        }
        for (const { state, disableEndpoint, attempt } of batch) {
          this.deps.onAttempt?.(
            state === 'succeeded' ? 'success' : disableEndpoint ? 'gone' : 'failure',
            attempt.durationMs,
          );
          if (state !== 'succeeded')
            log.info(
              {
                endpoint: attempt.endpointId,
                event_id: attempt.eventId,
                type: attempt.eventType,
                attempt: attempt.attempt,
                status: attempt.status,
                error: attempt.error,
              },
              'webhook attempt failed',
            );
        }
      })
      .catch((e: unknown) => {
        log.error({ err: e, attempts: batch.length }, 'webhooks: recording attempts failed; will retry');
        this.settled.unshift(...batch);
        this.deps.fanOut.notRecorded(fanOut);
        this.timer ??= setTimeout(() => void this.flush(), 1000).unref();
      })
      .finally(() => this.writing.delete(p));
    this.writing.add(p);
    return p;
  }
}
