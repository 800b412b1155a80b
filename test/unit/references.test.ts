// Every file a comment in src/ or a document in docs/ sends the reader to exists: a path written
// as `docs/….md`, `src/…`, `support/…`, `test/…`, `bench/…`, or a path under src/ (`store/sqlite/queue.ts`).
// A file moved or renamed without its references fails here, so a reader finds the code of a
// documented behaviour in one hop.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SRC_DIRS = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name);
const PREFIXES = ['docs', 'src', 'support', 'test', 'bench', ...SRC_DIRS];
const REF = new RegExp(`(?<![\\w./-])(?:${PREFIXES.join('|')})/[\\w./*-]+\\.(?:ts|md|json|toml)\\b`, 'g');

function files(dir: string, ext: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name), ext) : e.name.endsWith(ext) ? [join(dir, e.name)] : [],
  );
}

/** Whether `ref` names a file (or, with a `*`, at least one file) at the root or under src/. */
function exists(ref: string): boolean {
  if (!ref.includes('*')) return existsSync(join(ROOT, ref)) || existsSync(join(ROOT, 'src', ref));
  const dir = ref.slice(0, ref.lastIndexOf('/'));
  const pattern = new RegExp(
    `^${ref
      .slice(dir.length + 1)
      .replace(/[.]/g, '\\.')
      .replace(/\*/g, '.*')}$`,
  );
  return [join(ROOT, dir), join(ROOT, 'src', dir)].some(
    (d) => existsSync(d) && readdirSync(d).some((n) => pattern.test(n)),
  );
}

t.test('the files that src/ and docs/ name exist', async (t) => {
  const sources = [...files(join(ROOT, 'src'), '.ts'), ...files(join(ROOT, 'docs'), '.md'), join(ROOT, 'README.md')];
  const missing: string[] = [];
  let seen = 0;
  for (const file of sources) {
    for (const m of readFileSync(file, 'utf8').matchAll(REF)) {
      // URL paths (api/v1/…) are routes, not files.
      if (m[0].startsWith('api/v1/')) continue;
      seen++;
      if (!exists(m[0])) missing.push(`${relative(ROOT, file)}: ${m[0]}`);
    }
  }
  t.ok(seen > 50, `${seen} references read`);
  t.same(missing, [], 'every named file exists');
});

t.test("the README's test recipes run files that exist, on the Node.js it names", async (t) => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const runs = [...readme.matchAll(/\bdist\/(test\/[\w./-]+)\.js\b/g)].map((m) => `${m[1]}.ts`);
  t.ok(runs.length >= 2, `${runs.length} test files named`);
  t.same(
    runs.filter((f) => !existsSync(join(ROOT, f))),
    [],
    'every test file a recipe runs has its source',
  );
  const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } })
    .engines.node;
  const floor = engines.replace(/^>=\s*/, '');
  t.match(
    readme,
    new RegExp(`Node\\.js ${floor.replace(/\./g, '\\.')} or later \\(\`engines\``),
    'the README says the floor package.json sets',
  );
});
