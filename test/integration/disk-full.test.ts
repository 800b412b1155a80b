import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { customerId, makeDomain, makeKey, startTestServer, TEST_ENGINE } from '../helpers/env.js';
import { request } from '../helpers/http.js';
import { RawSmtp } from '../helpers/smtp-client.js';

// limits.max_store_bytes caps the SQLite file; a PostgreSQL server's space is its own to manage
// (its disk-full errors, class 53, map to the same answers: store/pg/db.ts).
t.test(
  'a full store: the API answers 503 and SMTP 452 4.3.1, nothing half-written, and service resumes',
  { skip: TEST_ENGINE === 'postgres' && 'SQLite only: the cap is on the SQLite file' },
  async (t) => {
    const s = await startTestServer('', { manualDelivery: true });
    t.teardown(() => s.close());
    const key = await makeKey(s.store);
    await makeDomain(s.store, 'example.com');
    await s.store.domains.add({
      customerId: await customerId(s.store),
      name: 'in.example.com',
      receiving: true,
      now: Date.now(),
    });
    const big = 'x'.repeat(20_000);
    const post = (i: number) =>
      request(`${s.url}/api/v1/emails`, {
        key,
        body: { from: 'a@example.com', to: `r${i}@example.org`, subject: `s${i}`, text_body: big },
      });
    t.equal((await post(0)).status, 202);

    // Cap the file a little above what it holds now (limits.max_store_bytes, applied by SIGHUP's reload).
    const pageSize = await s.sql.value('PRAGMA page_size');
    const pages = (await s.sql.value('PRAGMA page_count')) + 30;
    const capped = loadConfig({
      path: s.configPath,
      env: { POSTHASTE_LIMITS_MAX_STORE_BYTES: String(pages * pageSize) },
    });
    t.same(s.daemon.reload(capped).applied, ['limits.max_store_bytes']);

    let full: Awaited<ReturnType<typeof post>> | undefined;
    let i = 1;
    for (; i < 400 && !full; i++) {
      const r = await post(i);
      if (r.status !== 202) full = r;
    }
    t.ok(full, `the store filled after ${i - 1} messages`);
    t.comment(JSON.stringify({ status: full!.status, body: full!.body }));
    t.equal(full!.status, 503);
    t.equal(full!.body.error.code, 'store_unavailable');
    t.equal(full!.headers.get('retry-after'), '30');
    const messages = (await s.sql.value('SELECT COUNT(*) FROM messages')) as number;
    const orphans = await s.sql.value(
      'SELECT COUNT(*) FROM recipients WHERE message_id NOT IN (SELECT id FROM messages)',
    );
    t.equal(orphans, 0, 'no recipient without its message');
    t.equal(messages, i - 2 + 1, 'every 202 is stored, the refused one is not');
    t.equal(await s.sql.value('PRAGMA integrity_check'), 'ok');

    const c = await RawSmtp.connect(s.daemon.smtp.port);
    await c.cmd('EHLO client.test');
    const r = await c.send(
      'bob@sender.test',
      ['support@in.example.com'],
      `Subject: full\r\n\r\n${'y'.repeat(70)}\r\n`.repeat(300),
    );
    t.comment(r.data);
    t.match(r.data, /^452 4\.3\.1/, 'SMTP: 452 4.3.1, never a false 250');
    t.equal(await s.sql.value('SELECT COUNT(*) FROM inbound_messages'), 0);

    // Space returns: service resumes.
    t.same(s.daemon.reload(loadConfig({ path: s.configPath, env: {} })).applied, ['limits.max_store_bytes']);
    t.equal((await post(1000)).status, 202);
    const again = await c.send('bob@sender.test', ['support@in.example.com'], 'Subject: ok\r\n\r\nhello\r\n');
    t.match(again.data, /^250/);
    c.close();
  },
);
