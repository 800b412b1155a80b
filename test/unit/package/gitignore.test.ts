// What the project's own commands leave in the tree is ignored by git: `npm pack` writes
// posthaste-<version>.tgz at the root, which must not show up as untracked.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { name: string; version: string };

/** True when git ignores `path` (relative to the root); `git check-ignore` exits 1 when it does not. */
function ignored(path: string): boolean {
  try {
    execFileSync('git', ['check-ignore', '--no-index', '-q', path], { cwd: ROOT, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

t.test("npm pack's tarball is ignored", { skip: !existsSync(`${ROOT}.git`) && 'not a git checkout' }, async (t) => {
  t.ok(ignored(`${pkg.name}-${pkg.version}.tgz`), `${pkg.name}-${pkg.version}.tgz`);
  t.ok(ignored(`${pkg.name}-1.2.3-rc.1.tgz`), 'any version');
  t.notOk(ignored('docs/api.md'), 'a tracked file is not');
});
