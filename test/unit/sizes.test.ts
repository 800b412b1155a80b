// The house's sizes: no file under src/ over 350 lines, no function over 60 lines of its own
// (its body's lines less those of the functions written inside it, so a factory that returns
// short methods is as long as its own code). A file or function that grows past them fails here:
// split it by concern.

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));
export const FILE_LINES = 350;
export const FUNCTION_LINES = 60;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Lines of a file, the last one counted when it does not end in a newline (as `wc -l` plus one). */
export const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

/** `file:line (n lines)` of each function whose own lines (nested functions' bodies left out) pass the limit. */
export function longFunctions(file: string, text: string, limit = FUNCTION_LINES): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const line = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line;
  const span = (body: ts.Node) => line(body.end) - line(body.getStart(sf)) + 1;
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const body = node.body as ts.Node;
      let nested = 0;
      const inner = (m: ts.Node): void => {
        if (ts.isFunctionLike(m) && 'body' in m && m.body) nested += span(m.body as ts.Node);
        else ts.forEachChild(m, inner);
      };
      ts.forEachChild(body, inner);
      const own = span(body) - nested;
      if (own > limit) found.push(`${file}:${line(node.getStart(sf)) + 1} (${own} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

t.test('the checks count what they say', async (t) => {
  t.equal(lineCount('a\nb\n'), 2);
  t.equal(lineCount('a\nb'), 2);
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  const x${i} = ${i};`).join('\n');
  t.same(longFunctions('a.ts', `function f() {\n${body(58)}\n}\n`), [], '60 lines with its braces');
  t.same(longFunctions('a.ts', `function f() {\n${body(59)}\n}\n`), ['a.ts:1 (61 lines)']);
  const inner = `  const g = () => {\n${body(40)}\n  };`;
  t.same(longFunctions('a.ts', `function f() {\n${inner}\n${body(30)}\n}\n`), [], 'a nested function is its own');
  t.same(longFunctions('a.ts', `class A {\n  m() {\n${body(70)}\n  }\n}\n`), ['a.ts:2 (72 lines)'], 'methods too');
});

t.test(`no file under src/ is over ${FILE_LINES} lines`, async (t) => {
  const over = sources(SRC)
    .map((f) => [relative(SRC, f), lineCount(readFileSync(f, 'utf8'))] as const)
    .filter(([, n]) => n > FILE_LINES)
    .map(([f, n]) => `${f} (${n} lines)`);
  t.same(over, [], 'split each by concern');
});

t.test(`no function in src/ is over ${FUNCTION_LINES} lines of its own`, async (t) => {
  const found = sources(SRC).flatMap((f) => longFunctions(relative(SRC, f), readFileSync(f, 'utf8')));
  t.same(found, [], 'name its steps and make each a function');
});
