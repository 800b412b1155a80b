import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { memoryOf, spawnDaemon } from '../../support/daemon-process.js';
import { quiet, waitFor } from '../../support/wait.js';
import { makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import { mxOfDomain } from '../helpers/mail-env.js';

// The daemon's footprint under its everyday load: thousands of small messages posted to the API
// while it composes, signs (DKIM) and delivers them. Its peak resident memory (VmHWM, the kernel's
// own count, threads and all) must stay under 256 MB, as through every benchmark
// (bench/RESULTS.md) and the bad-input corpus (bad-input.test.ts).
const MESSAGES = 4000;
const BATCH = 50;
const BOUND_MIB = 256;

const { dns, mx } = await mxOfDomain('example.org');

t.test(
  `${MESSAGES} messages posted while they are signed and delivered: the daemon stays under ${BOUND_MIB} MB`,
  async (t) => {
    const dir = tempDir();
    t.teardown(dir.remove);
    const path = writeTestConfig(dir.path, `[outbound]\nport = ${mx.port}\npoll_interval = "100ms"\n`, dns.server);
    const store = await openTestStore(loadConfig({ path, env: {} }));
    const key = await makeKey(store, 'production');
    await makeDomain(store, 'example.com');
    await store.admin.close();
    const d = await spawnDaemon(path, {}, { bare: true });
    t.teardown(() => {
      if (d.child.exitCode === null) d.child.kill('SIGKILL');
    });
    await quiet(1000); // settled after start: the idle figure
    const idle = memoryOf(d.child.pid!).rss;

    // A 2 KB message with long lines (quoted-printable), as the deliver benchmark sends.
    const text = `Hello,\n${'Lorem ipsum dolor sit amet. '.repeat(68)}\n`;
    const batch = (n: number) =>
      JSON.stringify(
        Array.from({ length: BATCH }, (_, i) => ({
          from: 'Shop <shop@example.com>',
          to: `user${n * BATCH + i}@example.org`,
          subject: `Order ${n * BATCH + i}`,
          text_body: text,
        })),
      );
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < MESSAGES / BATCH) {
          const res = await fetch(`${d.apiUrl}/api/v1/emails/batch`, {
            method: 'POST',
            headers: { authorization: `Token ${key}`, 'content-type': 'application/json' },
            body: batch(next++),
          });
          t.equal(res.status, 202, 'batch accepted');
          await res.arrayBuffer();
        }
      }),
    );
    await waitFor(`${MESSAGES} messages at the MX`, () => mx.received.length >= MESSAGES, 120_000, 50);
    t.equal(mx.received.length, MESSAGES, 'every message delivered once');
    t.match(mx.received[0]!.data.toString(), /^DKIM-Signature: /, 'signed');
    const { peak } = memoryOf(d.child.pid!);
    t.comment(`daemon memory: ${idle} MiB idle, ${peak} MiB at the peak`);
    t.ok(peak < BOUND_MIB, `peak ${peak} MiB, under ${BOUND_MIB}`);
    t.notMatch(d.output(), /"level":50/, 'nothing logged as an error');
  },
);
