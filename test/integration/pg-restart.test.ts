import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startDaemon } from '../../src/main.js';
import { pgBinDir, startPgCluster } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';
import { makeDomain, makeKey, openTestStore, tempDir, writeTestConfig } from '../helpers/env.js';
import { testSql } from '../helpers/sql.js';

// PostgreSQL restarted (pg_ctl restart -m fast) under a steady load of valid sends to two nodes:
// every answer is 202 or 503 store_unavailable with Retry-After, nothing else (a 400 would tell
// the client not to retry what the server failed to take), and every 202 is in the database.

/** Bounds: this many requests at most, for this long at most. */
const MAX_REQUESTS = 800;
const MAX_MS = 40_000;
const CLIENTS = 8;
const RESTARTS = 3;

interface Answer {
  to: string;
  status: number;
  code: string | undefined;
  retryAfter: string | null;
}

/** One valid send, and what came back (status 0: no answer at all). */
async function sendOnce(apiUrl: string, key: string, to: string, subject: string): Promise<Answer> {
  try {
    const r = await fetch(`${apiUrl}/api/v1/emails`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'shop@example.com', to, subject, text_body: 'Hello' }),
    });
    const body = (await r.json()) as { error?: { code: string } };
    return { to, status: r.status, code: body.error?.code, retryAfter: r.headers.get('retry-after') };
  } catch (e) {
    return { to, status: 0, code: (e as Error).message, retryAfter: null };
  }
}

/** Two nodes (queues held: nothing is delivered) on `url`, a key and a sending domain. */
async function twoNodes(t: Test, url: string) {
  const node = async (name: string) => {
    const dir = tempDir();
    t.teardown(dir.remove);
    const path = writeTestConfig(dir.path, '[outbound]\nhold = true\n', undefined, '', undefined, url);
    return loadConfig({ path, env: { POSTHASTE_SERVER_NODE_NAME: name } });
  };
  const configs = [await node('a'), await node('b')];
  const setup = await openTestStore(configs[0]!);
  const key = await makeKey(setup);
  await makeDomain(setup, 'example.com');
  await setup.admin.close();
  const daemons: Awaited<ReturnType<typeof startDaemon>>[] = [];
  for (const config of configs) {
    const d = await startDaemon(config, silentLogger());
    t.teardown(() => d.stop());
    daemons.push(d);
  }
  return { config: configs[0]!, key, daemons };
}

/**
 * CLIENTS clients sending round-robin to the daemons, RESTARTS restarts while they do, 100 answers
 * apart; they stop after 150 answers past the last, or at MAX_REQUESTS or MAX_MS.
 */
async function loadWithRestarts(daemons: { apiUrl: string }[], key: string, restart: () => Promise<void>) {
  const answers: Answer[] = [];
  let sent = 0;
  let restarted = false;
  let afterRestart = 0;
  const started = Date.now();
  const more = () => sent < MAX_REQUESTS && Date.now() - started < MAX_MS && !(restarted && afterRestart >= 150);
  const client = async (c: number) => {
    while (more()) {
      const n = sent++;
      const daemon = daemons[n % daemons.length]!;
      const to = `r${n}@example.net`;
      const answer = await sendOnce(daemon.apiUrl, key, to, `client ${c}`);
      answers.push(answer);
      if (restarted) afterRestart++;
    }
  };
  const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
  // Under way first, then the restarts in the middle of it (three: a request that meets a
  // connection as it is cut is a matter of timing).
  const restartsAt: number[] = [];
  for (let i = 0; i < RESTARTS; i++) {
    const at = answers.length + 100;
    await waitFor('the load under way', () => answers.length >= at || !more(), 20_000, 10);
    restartsAt.push(answers.length);
    await restart();
  }
  restarted = true;
  await Promise.all(clients);
  return { answers, restartsAt, afterRestart };
}

t.test(
  'PostgreSQL restarts under concurrent valid sends: every answer is 202, or 503 with Retry-After',
  { skip: !pgBinDir() && 'PostgreSQL server binaries not installed' },
  async (t) => {
    const pg = await startPgCluster();
    t.teardown(() => pg.remove());
    const { config, key, daemons } = await twoNodes(t, pg.url);

    const started = Date.now();
    const { answers, restartsAt, afterRestart } = await loadWithRestarts(daemons, key, () => pg.restart());

    const tally = answers.reduce(
      (m, a) => m.set(`${a.status} ${a.code ?? ''}`.trim(), (m.get(`${a.status} ${a.code ?? ''}`.trim()) ?? 0) + 1),
      new Map<string, number>(),
    );
    t.comment(
      `${answers.length} requests in ${Date.now() - started} ms, restarts after ${restartsAt.join(', ')}: ${JSON.stringify(Object.fromEntries(tally))}`,
    );
    t.ok(answers.length <= MAX_REQUESTS, 'bounded in count');
    t.same(
      [...tally.keys()].filter((k) => k !== '202' && k !== '503 store_unavailable'),
      [],
      'no answer but 202 and 503 store_unavailable',
    );
    t.same(
      answers.filter((a) => a.status === 503 && a.retryAfter === null),
      [],
      'every 503 with Retry-After',
    );
    t.ok((tally.get('503 store_unavailable') ?? 0) > 0, 'the restart was felt: some sends refused with 503');
    t.ok(afterRestart > 0, 'sends went on after the restarts');
    await waitFor(
      'sends accepted again on both nodes',
      async () => {
        const rs = await Promise.all(daemons.map((d) => sendOnce(d.apiUrl, key, 'after@example.net', 'after')));
        return rs.every((r) => r.status === 202) ? true : undefined;
      },
      30_000,
      200,
    );
    const sql = testSql(config);
    t.teardown(() => sql.close());
    const accepted = answers.filter((a) => a.status === 202).map((a) => a.to);
    t.equal(
      await sql.value('SELECT count(*) FROM recipients WHERE address = ANY(?)', accepted),
      accepted.length,
      'every 202 is in the database',
    );
  },
);
