// docs/architecture.md's inventory of files stays true: every source file under src/ is named in
// the paragraph of its folder (in the document's fenced blocks, the line that starts with the
// longest `src/…/` prefix of its path, and the indented lines after it up to the next folder),
// so a newcomer who reads the map knows every file there is. The map may give each room its own
// block; a file added without its line, or a folder without its paragraph, fails here; a file
// named there that does not exist fails test/unit/references.test.ts.

import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The inventory: docs/architecture.md's fenced blocks (one of them lists src/main.ts), split into their folders' paragraphs. */
function inventory(): Map<string, string> {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const blocks = doc.split('```').filter((_, i) => i % 2 === 1);
  if (!blocks.some((b) => /^src\/main\.ts /m.test(b)))
    throw new Error('docs/architecture.md: no inventory (a fenced block listing src/main.ts)');
  const paragraphs = new Map<string, string>();
  for (const block of blocks) {
    let folder = '';
    for (const line of block.split('\n')) {
      const head = /^(src\/[\w./-]*)/.exec(line);
      if (head) folder = head[1]!;
      else if (/^\S/.test(line)) folder = '';
      if (folder) paragraphs.set(folder, `${paragraphs.get(folder) ?? ''}\n${line}`);
    }
  }
  return paragraphs;
}

t.test("every file under src/ is named in its folder's paragraph of docs/architecture.md", async (t) => {
  const paragraphs = inventory();
  const missing: string[] = [];
  const sources = files(join(ROOT, 'src')).map((f) => relative(ROOT, f));
  for (const file of sources) {
    const folder = [...paragraphs.keys()]
      .filter((f) => file === f || (f.endsWith('/') && file.startsWith(f)))
      .sort((a, b) => b.length - a.length)[0];
    if (!folder) {
      missing.push(`${file}: no paragraph for its folder`);
      continue;
    }
    const name = basename(file);
    if (file !== folder && !new RegExp(`(?<![\\w-])${name.replace(/\./g, '\\.')}`).test(paragraphs.get(folder)!))
      missing.push(`${file}: not named under ${folder}`);
  }
  t.ok(sources.length > 100, `${sources.length} files under src/`);
  t.same(missing, [], 'each named in the inventory');
});
