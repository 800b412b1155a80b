// A doc comment belongs to the declaration right below it. One directly followed by another doc
// comment describes nothing (or, in an editor, the wrong thing): a comment left behind when the
// code it described moved. Checked over every file under src/.

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** `file:line` of each doc comment whose next line opens another doc comment. */
export function strandedDocComments(file: string, text: string): string[] {
  const lines = text.split('\n');
  const found: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.trimStart().startsWith('/**')) continue;
    const start = i;
    while (i < lines.length && !lines[i]!.includes('*/')) i++;
    if (lines[i + 1]?.trimStart().startsWith('/**')) found.push(`${file}:${start + 1}`);
  }
  return found;
}

t.test('the check finds a stranded doc comment', async (t) => {
  t.same(strandedDocComments('a.ts', '/** One. */\n/** Two. */\nconst x = 1;\n'), ['a.ts:1']);
  t.same(strandedDocComments('a.ts', '/**\n * One.\n */\n/** Two. */\nconst x = 1;\n'), ['a.ts:1']);
  t.same(strandedDocComments('a.ts', '/** One. */\nconst x = 1;\n/** Two. */\nconst y = 2;\n'), []);
});

t.test('no doc comment in src/ is directly followed by another', async (t) => {
  const found = sources(SRC).flatMap((f) => strandedDocComments(relative(SRC, f), readFileSync(f, 'utf8')));
  t.same(found, [], 'each of these describes nothing: move it to its declaration, or merge the two');
});
