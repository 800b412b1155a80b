// What SIGHUP can change is decided by one table (daemon/reload.ts RELOADERS) and handed to each part as
// its settings (config/settings.ts). A part that read a reloadable key from the configuration
// object itself would keep the value it started with; this test finds such reads in src/.

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { schema } from '../../../src/config/schema.js';
import { RELOADABLE_KEYS } from '../../../src/daemon/reload.js';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** `config.section.key`, `.section.key` or `.section['key']`: a read of one key through the configuration. */
const readsOf = (key: string): RegExp => {
  const [section, name] = [key.slice(0, key.indexOf('.')), key.slice(key.indexOf('.') + 1)];
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`\\.${esc(section)}(?:\\.${esc(name)}\\b|\\[['"]${esc(name)}['"]\\])`);
};

/** Files allowed to read them: the configuration's own modules, the composition root (start values and the reloaders), and the CLI (one process per command, reading the file fresh). */
const allowed = (file: string) => file.startsWith('config/') || file === 'main.ts' || file.startsWith('cli/');

/** Where src/ reads a reloadable key from the configuration outside the allowed files. */
export function staleReads(keys: Iterable<string>, files: Array<{ path: string; text: string }>): string[] {
  const found: string[] = [];
  for (const key of keys) {
    const re = readsOf(key);
    for (const f of files) if (!allowed(f.path) && re.test(f.text)) found.push(`${f.path} reads ${key}`);
  }
  return found;
}

t.test('reloadable keys reach the parts only through their settings', async (t) => {
  const files = sources(SRC).map((path) => ({ path: relative(SRC, path), text: readFileSync(path, 'utf8') }));
  t.ok(RELOADABLE_KEYS.size >= 10, `the table names the reloadable keys (${RELOADABLE_KEYS.size})`);
  for (const key of RELOADABLE_KEYS) {
    const [section, name] = [key.slice(0, key.indexOf('.')), key.slice(key.indexOf('.') + 1)];
    t.ok((schema as Record<string, Record<string, unknown>>)[section]?.[name], `${key} is a key of the schema`);
  }
  t.same(staleReads(RELOADABLE_KEYS, files), []);
});

t.test('the check finds a read that would go stale', async (t) => {
  const files = [
    { path: 'api/routes/x.ts', text: 'const n = config.limits.max_recipients;' },
    { path: 'inbound/y.ts', text: "if (config.smtp['tls.cert']) offer();" },
    { path: 'config/settings.ts', text: 'c.limits.max_recipients' },
    { path: 'api/routes/z.ts', text: 'config.limits.max_message_bytes' },
  ];
  t.same(staleReads(['limits.max_recipients', 'smtp.tls.cert'], files), [
    'api/routes/x.ts reads limits.max_recipients',
    'inbound/y.ts reads smtp.tls.cert',
  ]);
});
