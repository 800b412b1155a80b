import { existsSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';

// A listen address that cannot be had stops the daemon at start, naming the configuration key
// and the address, with a non-zero exit; no other listener answered before, and the store was
// not touched. The daemon runs as a process, as systemd starts it.

/** A free loopback port (bound for a moment, then let go). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

const KEYS = [
  'api.listen',
  'smtp.listen',
  'dashboard.listen',
  'metrics.listen',
  'submission.listen',
  'submission.listen_tls',
] as const;

for (const busyKey of KEYS) {
  t.test(`${busyKey} in use: the start fails naming it, before anything answers`, async (t) => {
    const dir = tempDir();
    t.teardown(dir.remove);
    // Another program holds the port.
    const squatter = net.createServer((sock) => sock.destroy());
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', () => resolve()));
    t.teardown(() => new Promise((resolve) => squatter.close(resolve)));
    const busy = (squatter.address() as net.AddressInfo).port;
    const ports: Record<string, number> = {};
    for (const k of KEYS) ports[k] = k === busyKey ? busy : await freePort();
    const at = (k: string) => `127.0.0.1:${ports[k]}`;
    const config = join(dir.path, 'posthaste.toml');
    writeFileSync(
      config,
      `[server]\nhostname = "mx.test.posthaste"\ndata_dir = "${join(dir.path, 'data')}"\n[api]\nlisten = "${at('api.listen')}"\n[smtp]\nlisten = "${at('smtp.listen')}"\n` +
        `[dashboard]\nlisten = "${at('dashboard.listen')}"\n[metrics]\nenabled = true\nlisten = "${at('metrics.listen')}"\n[dns]\nservers = ["127.0.0.1:9"]\n[log]\nlevel = "info"\n` +
        `[submission]\nlisten = "${at('submission.listen')}"\nlisten_tls = "${at('submission.listen_tls')}"\ntls.cert = "${fixturePath('tls/server.pem')}"\ntls.key = "${fixturePath('tls/server-key.pem')}"\n`,
    );
    // Clients knocking on the other addresses while the daemon starts: an SMTP greeting or an HTTP
    // answer is one it should not have given. (The start's check binds each address for a moment,
    // so a connection may be taken and closed, without a byte.)
    const answers: string[] = [];
    const probing = setInterval(() => {
      for (const k of KEYS.filter((x) => x !== busyKey)) {
        const c = net.connect(ports[k]!, '127.0.0.1', () => c.write('GET /healthz HTTP/1.0\r\n\r\n'));
        c.on('data', (d) => {
          answers.push(`${k}: ${d.toString().split('\r\n')[0]}`);
          c.destroy();
        });
        c.on('error', () => {});
        setTimeout(() => c.destroy(), 500).unref();
      }
    }, 5);
    const r = await runCli(['--config', config, 'serve']);
    clearInterval(probing);
    t.not(r.code, 0, 'exits non-zero');
    t.match(
      r.stderr,
      `${busyKey} = "127.0.0.1:${busy}": cannot listen: the address is already in use (another process, or another posthaste key, listens there): stop it or choose another address (EADDRINUSE)`,
      'names the key, the address and the fix',
    );
    t.notMatch(r.stdout, /Server listening|posthaste is running/, 'no listener came up');
    t.same(answers, [], 'nothing answered on the other addresses');
    t.notOk(existsSync(join(dir.path, 'data', 'posthaste.db')), 'the store was not created');
  });
}

t.test('two keys on one address: the second is named', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const port = await freePort();
  const config = join(dir.path, 'posthaste.toml');
  writeFileSync(
    config,
    `[server]\ndata_dir = "${join(dir.path, 'data')}"\n[api]\nlisten = "127.0.0.1:${port}"\n[smtp]\nlisten = "127.0.0.1:0"\n[dashboard]\nlisten = "127.0.0.1:${port}"\n[dns]\nservers = ["127.0.0.1:9"]\n`,
  );
  const r = await runCli(['--config', config, 'serve']);
  t.not(r.code, 0);
  t.match(r.stderr, `dashboard.listen = "127.0.0.1:${port}": cannot listen: the address is already in use`);
});
