// bench/e2e: end to end, from the first message handed over to the last one at a loopback
// smtp-sink. posthaste: clients POST N 2 KB messages to the API (one per request, SESSIONS at a
// time) while the daemon composes, DKIM-signs and delivers them. Beside, in the same run, Postfix:
// smtp-source hands the same number of messages of the same size over SESSIONS SMTP sessions to
// its smtpd, and its smtp client relays them to the same sink; then again with OpenDKIM signing in
// smtpd (bench/opendkim.ts), so that Postfix does the work posthaste does. Each is timed until
// nothing is left to deliver. The goal is against Postfix without DKIM.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { TestMx } from '../support/mx-server.js';
import { PostfixPeer } from '../support/postfix.js';
import {
  cpuLine,
  type DiskState,
  daemonArgs,
  diskLine,
  fixedPort,
  fmt,
  idleMemory,
  type MachineCpu,
  machineCpu,
  machineLine,
  memoryLine,
  memoryOf,
  settleDisk,
  spawnReady,
  stop,
  waitUntil,
} from './lib.js';
import { startOpendkim } from './opendkim.js';
import { smtpSource } from './postfix.js';
import { againstPostfix, benchMessage, rateLine, sinkRig } from './sink-rig.js';

const N = Number(process.env.BENCH_E2E_N ?? 10_000);
const SESSIONS = 20;
const SINK_PORT = fixedPort(24027);
const POSTFIX_PORT = fixedPort(24589);
const POSTFIX_DKIM_PORT = fixedPort(24590);
const MILTER_PORT = fixedPort(24591);

/**
 * Postfix end to end in a new instance under `dir` (more main.cf lines in `extra`): `before` runs
 * first, then N messages are timed until its queue is empty. Every message must have been sent:
 * a milter that failed would have had them all refused, and an empty queue would say nothing.
 */
async function postfixEndToEnd(
  dir: string,
  port: number,
  extra: string[] = [],
  before?: () => Promise<void>,
): Promise<{ seconds: number; disk: DiskState; cpu: MachineCpu }> {
  const pf = new PostfixPeer({ dir, port, relayPort: SINK_PORT, hostname: 'bench.local', extra }).start();
  try {
    await sleep(500);
    const sentBefore = before ? 1 : 0;
    if (before) await before();
    const disk = await settleDisk();
    const cpu0 = machineCpu();
    const t = performance.now();
    smtpSource(port, N, SESSIONS, 2048);
    await waitUntil(() => pf.queued() === 0, 600_000);
    const seconds = (performance.now() - t) / 1000;
    const cpu = machineCpu(cpu0);
    const sent = () => pf.log().match(/ status=sent /g)?.length ?? 0;
    await waitUntil(() => sent() >= N + sentBefore, 30_000).catch(() => {
      throw new Error(`Postfix sent ${sent() - sentBefore} of ${N} messages (${dir}/maillog)`);
    });
    return { seconds, disk, cpu };
  } finally {
    pf.stop();
  }
}

export async function benchE2e(): Promise<{ lines: string[] }> {
  const { dir, db, key, config, close } = await sinkRig('e2e', SINK_PORT);
  try {
    const delivered = db.sqlite.prepare("SELECT COUNT(*) FROM recipients WHERE state = 'delivered'").pluck();
    const ph = await spawnReady(
      process.execPath,
      daemonArgs(config, join(dir, 'prof')),
      /API on (http:\/\/127\.0\.0\.1:\d+)/,
    );
    let phSeconds: number;
    let size: number;
    let peak: number;
    let cpu: string;
    let acceptedSeconds: number;
    let phDisk: DiskState;
    let phMachine: MachineCpu;
    const idle = await idleMemory(ph.child.pid!);
    const pool = new Pool(ph.match[1]!, { connections: SESSIONS });
    try {
      const body = (i: number) => JSON.stringify(benchMessage(`rcpt${i}@sink.test`));
      let next = 0;
      let refused = 0;
      phDisk = await settleDisk();
      const phMachine0 = machineCpu();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: SESSIONS }, async () => {
          while (next < N) {
            const res = await pool.request({
              method: 'POST',
              path: '/api/v1/emails',
              headers: { authorization: `Token ${key.key}`, 'content-type': 'application/json' },
              body: body(next++),
            });
            await res.body.dump();
            if (res.statusCode !== 202) refused++;
          }
        }),
      );
      if (refused) throw new Error(`posthaste refused ${refused} of ${N} messages`);
      acceptedSeconds = (performance.now() - t0) / 1000;
      await waitUntil(() => (delivered.get() as number) === N, 600_000);
      phSeconds = (performance.now() - t0) / 1000;
      phMachine = machineCpu(phMachine0);
      peak = memoryOf(ph.child.pid!).peak;
      cpu = cpuLine(ph.child.pid!, N);
      size = db.sqlite.prepare('SELECT AVG(size) FROM messages').pluck().get() as number;
    } finally {
      await pool.close();
      await stop(ph.child);
    }

    // Postfix end to end: smtp-source → smtpd → queue → smtp → the same sink; then the same with
    // OpenDKIM signing in smtpd, the work posthaste does. One message to check.test goes first
    // through the second: it must arrive signed, with a signature that verifies.
    const {
      seconds: pfSeconds,
      disk: pfDisk,
      cpu: pfMachine,
    } = await postfixEndToEnd(join(dir, 'postfix'), POSTFIX_PORT);
    const milter = await startOpendkim(join(dir, 'opendkim'), MILTER_PORT);
    const check = await new TestMx('127.0.0.1').start();
    let dkim: { seconds: number; disk: DiskState; cpu: MachineCpu };
    let milterCpu: number;
    try {
      const extra = [
        `smtpd_milters = ${milter.socket}`,
        'milter_default_action = tempfail',
        `transport_maps = inline:{check.test=smtp:[127.0.0.1]:${check.port}}`,
      ];
      dkim = await postfixEndToEnd(join(dir, 'postfix-dkim'), POSTFIX_DKIM_PORT, extra, async () => {
        smtpSource(POSTFIX_DKIM_PORT, 1, 1, 2048, 'check@check.test');
        await waitUntil(() => check.received.length === 1, 30_000);
        await milter.verify(check.received[0]!.data);
      });
      milterCpu = milter.cpuSeconds();
    } finally {
      milter.stop();
      await check.stop();
    }
    return {
      lines: [
        `e2e: ${fmt(N)} messages (~${Math.round(size)} bytes composed) handed over by ${SESSIONS} clients at once, timed until the last is at a loopback smtp-sink`,
        ...againstPostfix(
          N,
          { label: 'posthaste (POST /api/v1/emails, compose, DKIM rsa-sha256, deliver)  ', seconds: phSeconds },
          { label: 'Postfix 3 (smtp-source -> smtpd -> queue -> smtp, no DKIM)          ', seconds: pfSeconds },
        ),
        rateLine(N, {
          label: 'Postfix 3 + OpenDKIM milter (DKIM rsa-sha256 in smtpd)              ',
          seconds: dkim.seconds,
        }),
        `  ratio posthaste / Postfix + OpenDKIM, the same work  ${fmt(dkim.seconds / phSeconds, 2)}  (OpenDKIM: ${fmt(milterCpu, 1)} CPU s)`,
        diskLine([
          { label: 'posthaste', ...phDisk },
          { label: 'Postfix', ...pfDisk },
          { label: 'Postfix + OpenDKIM', ...dkim.disk },
        ]),
        memoryLine(peak, idle),
        `  posthaste: the last of them accepted (202) after ${fmt(acceptedSeconds, 2)} s, ${fmt(N / acceptedSeconds)} a second while delivering`,
        cpu,
        machineLine(N, [
          { label: 'posthaste', cpu: phMachine },
          { label: 'Postfix', cpu: pfMachine },
          { label: 'Postfix + OpenDKIM', cpu: dkim.cpu },
        ]),
      ],
    };
  } finally {
    await close();
  }
}
