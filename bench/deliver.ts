// bench/deliver: N queued 2 KB messages delivered to a loopback smtp-sink over SMTP (DKIM signing on),
// messages per second until the queue is empty; beside, in the same run, Postfix relaying the same
// N messages (injected by smtp-source while its outbound is held, then released) to the same sink.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  cpuLine,
  daemonArgs,
  diskLine,
  fixedPort,
  fmt,
  machineCpu,
  machineLine,
  memoryLine,
  memoryOf,
  settleDisk,
  spawnReady,
  stop,
  waitUntil,
} from './lib.js';
import { heldRelay, smtpSource } from './postfix.js';
import { againstPostfix, queueMessages, signatureMs, sinkRig } from './sink-rig.js';

const N = Number(process.env.BENCH_DELIVER_N ?? 20_000);
const SINK_PORT = fixedPort(24025);
const POSTFIX_PORT = fixedPort(24587);

export async function benchDeliver(): Promise<{ lines: string[] }> {
  const { dir, db, key, config, close } = await sinkRig('deliver', SINK_PORT);
  try {
    // posthaste: fill the queue, then start the daemon and time until the queue is empty.
    queueMessages(db, key.id, N);
    const left = db.sqlite.prepare("SELECT COUNT(*) FROM recipients WHERE state IN ('queued', 'deferred')").pluck();
    const phDisk = await settleDisk();
    const phMachine0 = machineCpu();
    const t0 = performance.now();
    const ph = await spawnReady(process.execPath, daemonArgs(config, join(dir, 'prof')), /API on/);
    await waitUntil(() => (left.get() as number) === 0, 600_000);
    const phSeconds = (performance.now() - t0) / 1000;
    const phMachine = machineCpu(phMachine0);
    const memory = memoryOf(ph.child.pid!);
    const cpu = cpuLine(ph.child.pid!, N);
    await stop(ph.child);
    if (process.env.BENCH_PROF) return { lines: [`profile written to ${join(dir, 'prof')}`] };
    const delivered = db.sqlite
      .prepare("SELECT COUNT(*) FROM recipients WHERE state = 'delivered'")
      .pluck()
      .get() as number;
    const size = db.sqlite.prepare('SELECT AVG(size) FROM messages').pluck().get() as number;
    if (delivered !== N) throw new Error(`posthaste delivered ${delivered} of ${N}`);

    // Postfix: the same N through smtp-source into a held queue, released, timed until empty.
    const pf = heldRelay(join(dir, 'postfix'), POSTFIX_PORT, SINK_PORT).start();
    try {
      await sleep(500);
      smtpSource(POSTFIX_PORT, N, 20, 2048);
      await waitUntil(() => pf.queued() >= N, 120_000);
      const pfDisk = await settleDisk();
      const pfMachine0 = machineCpu();
      const t1 = performance.now();
      pf.release();
      await waitUntil(() => pf.queued() === 0, 600_000);
      const pfSeconds = (performance.now() - t1) / 1000;
      const pfMachine = machineCpu(pfMachine0);
      return {
        lines: [
          `deliver: ${N} queued messages (~${Math.round(size)} bytes composed) to a loopback smtp-sink`,
          ...againstPostfix(
            N,
            { label: 'posthaste (DKIM rsa-sha256, 10 connections/domain, start included)  ', seconds: phSeconds },
            { label: 'Postfix 3 relay (no DKIM, 20 connections/destination)               ', seconds: pfSeconds },
          ),
          diskLine([
            { label: 'posthaste', ...phDisk },
            { label: 'Postfix', ...pfDisk },
          ]),
          memoryLine(memory.peak),
          cpu,
          machineLine(N, [
            { label: 'posthaste', cpu: phMachine },
            { label: 'Postfix', cpu: pfMachine },
          ]),
          `  one RSA-2048 signature on this machine: ${fmt(signatureMs(), 2)} ms of CPU (node:crypto, in this process)`,
        ],
      };
    } finally {
      pf.stop();
    }
  } finally {
    await close();
  }
}
