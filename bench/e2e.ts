// bench/e2e: end to end, from the first message handed over to the last one at a loopback
// smtp-sink. posthaste: clients POST N 2 KB messages to the API (one per request, SESSIONS at a
// time) while the daemon composes, DKIM-signs and delivers them. Beside, in the same run, Postfix:
// smtp-source hands the same number of messages of the same size over SESSIONS SMTP sessions to
// its smtpd, and its smtp client relays them to the same sink. Both are timed until nothing is
// left to deliver.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { spawnReady, stop, fmt, daemonArgs, idleMemory, memoryOf, memoryLine, waitUntil } from './lib.js';
import { smtpSource } from './postfix.js';
import { sinkRig, benchMessage, againstPostfix } from './sink-rig.js';
import { PostfixPeer } from '../test/helpers/postfix.js';

const N = Number(process.env.BENCH_E2E_N ?? 10_000);
const SESSIONS = 20;
const SINK_PORT = 40027;
const POSTFIX_PORT = 40589;

export async function benchE2e(): Promise<{ lines: string[] }> {
  const { dir, db, key, config, close } = await sinkRig('e2e', SINK_PORT);
  try {
    const delivered = db.sqlite.prepare("SELECT COUNT(*) FROM recipients WHERE state = 'delivered'").pluck();
    const ph = await spawnReady(process.execPath, daemonArgs(config, join(dir, 'prof')), /API on (http:\/\/127\.0\.0\.1:\d+)/);
    let phSeconds: number;
    let size: number;
    let peak: number;
    const idle = await idleMemory(ph.child.pid!);
    const pool = new Pool(ph.match[1]!, { connections: SESSIONS });
    try {
      const body = (i: number) => JSON.stringify(benchMessage(`rcpt${i}@sink.test`));
      let next = 0;
      let refused = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: SESSIONS }, async () => {
          while (next < N) {
            const res = await pool.request({ method: 'POST', path: '/api/v1/emails', headers: { authorization: `Token ${key.key}`, 'content-type': 'application/json' }, body: body(next++) });
            await res.body.dump();
            if (res.statusCode !== 202) refused++;
          }
        }),
      );
      if (refused) throw new Error(`posthaste refused ${refused} of ${N} messages`);
      await waitUntil(() => (delivered.get() as number) === N, 600_000);
      phSeconds = (performance.now() - t0) / 1000;
      peak = memoryOf(ph.child.pid!).peak;
      size = db.sqlite.prepare('SELECT AVG(size) FROM messages').pluck().get() as number;
    } finally {
      await pool.close();
      await stop(ph.child);
    }

    // Postfix end to end: smtp-source → smtpd → queue → smtp → the same sink.
    const pf = new PostfixPeer({ dir: join(dir, 'postfix'), port: POSTFIX_PORT, relayPort: SINK_PORT, hostname: 'bench.local' }).start();
    try {
      await sleep(500);
      const t1 = performance.now();
      smtpSource(POSTFIX_PORT, N, SESSIONS, 2048);
      await waitUntil(() => pf.queued() === 0, 600_000);
      const pfSeconds = (performance.now() - t1) / 1000;
      return {
        lines: [
          `e2e: ${fmt(N)} messages (~${Math.round(size)} bytes composed) handed over by ${SESSIONS} clients at once, timed until the last is at a loopback smtp-sink`,
          ...againstPostfix(
            N,
            { label: 'posthaste (POST /api/v1/emails, compose, DKIM rsa-sha256, deliver)  ', seconds: phSeconds },
            { label: 'Postfix 3 (smtp-source -> smtpd -> queue -> smtp, no DKIM)          ', seconds: pfSeconds },
          ),
          memoryLine(peak, idle),
        ],
      };
    } finally {
      pf.stop();
    }
  } finally {
    await close();
  }
}
