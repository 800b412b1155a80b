// The layering of docs/architecture.md, checked over the import graph of src/: each folder may
// import only from folders below it, folders on one level do not import each other, and only
// store/ speaks SQL. A new import that runs the wrong way fails here.

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

/** Lowest first; a folder imports only from lower levels. */
export const LEVELS: string[][] = [
  ['domain'],
  ['config'],
  ['lib', 'mime'],
  ['store'],
  ['outbound', 'webhooks', 'domain-setup', 'cluster', 'send'],
  ['reports'],
  ['inbound'],
  ['api', 'dashboard', 'submission'],
  ['daemon'],
  ['main.ts'],
  ['cli'],
];

interface Edge {
  from: string;
  to: string;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The part of src/ a path belongs to: its top folder, or the file itself at the top. */
const partOf = (file: string) => relative(SRC, file).split(sep)[0]!.replace(/\.js$/, '.ts');

function edges(files: string[]): Edge[] {
  const out: Edge[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const target = normalize(join(dirname(file), m[1]!));
      out.push({ from: relative(SRC, file), to: relative(SRC, target) });
    }
  }
  return out;
}

/** The imports that break the levels. */
export function violations(all: Edge[], levels: string[][]): string[] {
  const level = new Map(levels.flatMap((names, i) => names.map((n) => [n, i] as const)));
  const bad: string[] = [];
  for (const e of all) {
    const a = partOf(join(SRC, e.from));
    const b = partOf(join(SRC, e.to));
    if (a === b) continue;
    const la = level.get(a);
    const lb = level.get(b);
    if (la === undefined || lb === undefined) bad.push(`${e.from} → ${e.to}: ${la === undefined ? a : b} has no level`);
    else if (lb >= la) bad.push(`${e.from} → ${e.to}: ${a} may not import ${b}`);
  }
  return bad;
}

const files = sources(SRC);

t.test('every import runs down the levels', async (t) => {
  const found = edges(files);
  t.ok(found.length > 300, `the graph was read (${found.length} imports)`);
  t.same(violations(found, LEVELS), []);
});

t.test('the check catches an import that runs up, and one across a level', async (t) => {
  t.same(violations([{ from: 'store/queue.ts', to: 'reports/read.js' }], LEVELS), [
    'store/queue.ts → reports/read.js: store may not import reports',
  ]);
  t.same(violations([{ from: 'outbound/deliver.ts', to: 'webhooks/sign.js' }], LEVELS), [
    'outbound/deliver.ts → webhooks/sign.js: outbound may not import webhooks',
  ]);
  t.same(violations([{ from: 'api/server.ts', to: 'store/db.js' }], LEVELS), []);
});

t.test('only store/ speaks SQL', async (t) => {
  const SQL =
    /\.statement\(|\.sqlite\b|\bdb\.q\.|\bdb\.(?:run|get|all)\(|\b(?:SELECT|INSERT|UPDATE|DELETE)\s+(?:\*|[a-z_]+\s*(?:,|FROM|INTO|SET)|FROM|INTO)/;
  const outside = files
    .filter((f) => partOf(f) !== 'store')
    .flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          SQL.test(line) && !/^\s*(\/\/|\*)/.test(line) ? [`${relative(SRC, f)}:${i + 1}: ${line.trim()}`] : [],
        ),
    );
  t.same(outside, []);
  t.ok(
    SQL.test("db.statement('SELECT 1')") &&
      SQL.test('DELETE FROM recipients') &&
      !SQL.test('select a domain from the list'),
    'the pattern finds SQL and not prose',
  );
});

/**
 * The store is one interface with two engines (docs/architecture.md, "The store"): above it, code
 * imports only the interface, its model and errors, how to open it, and the auth cache over it;
 * never an engine, and a database driver only inside its engine.
 */
const STORE_FACE = new Set([
  'store/store.ts',
  'store/model.ts',
  'store/errors.ts',
  'store/open.ts',
  'store/auth-cache.ts',
  'store/copy.ts',
]);

/** Imports of store/ from outside it that reach past the interface into an engine. */
export function intoEngines(all: Edge[]): string[] {
  return all
    .filter(
      (e) =>
        !e.from.startsWith(`store${sep}`) &&
        e.to.startsWith(`store${sep}`) &&
        !STORE_FACE.has(e.to.split(sep).join('/').replace(/\.js$/, '.ts')),
    )
    .map((e) => `${e.from} → ${e.to}`);
}

t.test('above the store, only its interface is imported; the engines and their drivers stay inside it', async (t) => {
  const found = edges(files);
  t.same(intoEngines(found), [], 'no part above the store imports an engine');
  t.same(
    intoEngines([{ from: `api${sep}server.ts`, to: `store${sep}sqlite${sep}db.js` }]),
    [`api${sep}server.ts → store${sep}sqlite${sep}db.js`],
    'the check catches one',
  );
  const drivers = files.flatMap((f) => {
    const text = readFileSync(f, 'utf8');
    const where = relative(SRC, f).split(sep).join('/');
    const out: string[] = [];
    if (/from 'better-sqlite3'/.test(text) && !where.startsWith('store/sqlite/'))
      out.push(`${where} imports better-sqlite3`);
    if (/from 'pg'/.test(text) && !where.startsWith('store/pg/')) out.push(`${where} imports pg`);
    return out;
  });
  t.same(drivers, [], 'better-sqlite3 only in store/sqlite/, pg only in store/pg/');
  const across = found
    .map((e) => ({ from: e.from.split(sep).join('/'), to: e.to.split(sep).join('/') }))
    .filter(
      (e) =>
        (e.from.startsWith('store/sqlite/') && e.to.startsWith('store/pg/')) ||
        (e.from.startsWith('store/pg/') && e.to.startsWith('store/sqlite/')),
    );
  t.same(across, [], 'the engines do not import each other');
});

/**
 * Import cycles, inside one folder or across folders, between the files of src/: files that import
 * one another cannot be read, tested or loaded one without the others. Type-only imports count as
 * well, and so do dynamic import()s. Each entry here is a known cycle, keyed by its files (sorted,
 * joined by ', '), with the reason it stays; src/ has none.
 */
export const KNOWN_CYCLES: ReadonlyMap<string, string> = new Map<string, string>([]);

const slashed = (p: string) => p.split(sep).join('/').replace(/\.js$/, '.ts');

/** Each group of files that reach one another through their imports (Tarjan's strongly connected components), as its sorted files and one path round it. */
export function cycles(all: Edge[]): Array<{ files: string[]; path: string[] }> {
  const next = new Map<string, string[]>();
  for (const e of all) next.set(slashed(e.from), [...(next.get(slashed(e.from)) ?? []), slashed(e.to)]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: Array<{ files: string[]; path: string[] }> = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, low.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group = stack.splice(stack.indexOf(v));
    if (group.length > 1 || (next.get(v) ?? []).includes(v))
      found.push({ files: group.sort(), path: roundPath(group[0]!, new Set(group), next) });
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The shortest path of imports from `start` back to itself, inside its group. */
function roundPath(start: string, group: Set<string>, next: Map<string, string[]>): string[] {
  const from = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    for (const w of next.get(queue[i]!) ?? []) {
      if (!group.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at: string | undefined = queue[i]; at !== undefined && at !== start; at = from.get(at))
          path.splice(1, 0, at);
        return [...path, start];
      }
      if (!from.has(w)) {
        from.set(w, queue[i]!);
        queue.push(w);
      }
    }
  }
  return [start];
}

t.test('no file imports itself back through others', async (t) => {
  const all = cycles(edges(files));
  const found = all.filter((c) => !KNOWN_CYCLES.has(c.files.join(', ')));
  t.same(
    found.map((c) => `${c.path.join(' → ')} (files that import one another: ${c.files.join(', ')})`),
    [],
    'no import cycle',
  );
  t.same(
    [...KNOWN_CYCLES.keys()].filter((k) => !all.some((c) => c.files.join(', ') === k)),
    [],
    'every known cycle still exists',
  );
});

t.test('the check finds a cycle inside a folder and one across folders, and reports the way round', async (t) => {
  const inside = cycles([
    { from: 'dashboard/server.ts', to: 'dashboard/routes/index.js' },
    { from: 'dashboard/routes/index.ts', to: 'dashboard/pages.js' },
    { from: 'dashboard/pages.ts', to: 'dashboard/server.js' },
    { from: 'dashboard/pages.ts', to: 'dashboard/html.js' },
  ]);
  t.same(inside, [
    {
      files: ['dashboard/pages.ts', 'dashboard/routes/index.ts', 'dashboard/server.ts'],
      path: ['dashboard/pages.ts', 'dashboard/server.ts', 'dashboard/routes/index.ts', 'dashboard/pages.ts'],
    },
  ]);
  t.same(
    cycles([
      { from: 'reports/read.ts', to: 'store/queue.js' },
      { from: 'store/queue.ts', to: 'reports/read.js' },
    ]).map((c) => c.path),
    [['reports/read.ts', 'store/queue.ts', 'reports/read.ts']],
  );
  t.same(
    cycles([{ from: 'lib/a.ts', to: 'lib/a.js' }]).map((c) => c.path),
    [['lib/a.ts', 'lib/a.ts']],
    'a file that imports itself',
  );
  t.same(
    cycles([
      { from: 'a/x.ts', to: 'b/y.js' },
      { from: 'b/y.ts', to: 'a/z.js' },
    ]),
    [],
    'a chain is no cycle',
  );
});
