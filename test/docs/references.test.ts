/**
 * Comments and messages point only to documents that ship with the repository: a reference to a
 * design note kept elsewhere (`DESIGN.md`) leaves a reader of the code with nothing to open.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCES = ['src', 'bench', 'test', 'media/src', 'native/addon', 'native/common', 'native/bench', 'native/build.mjs', 'native/CMakeLists.txt', '.ci', 'build.mjs'];

/** The project's own files under `top`: git's tracked and untracked-but-not-ignored ones (so
 * benchmark downloads such as bench/.repoqa/, ignored by .gitignore, are not scanned). */
function* files(top: string): Generator<string> {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', top], { cwd: ROOT, encoding: 'utf8' });
  for (const rel of out.split('\0')) {
    if (rel && /\.(ts|mjs|js|cpp|h|sh|txt)$|\/run$/.test(rel) && fs.existsSync(path.join(ROOT, rel))) yield path.join(ROOT, rel);
  }
}

test('every document named in the sources (an upper-case NAME.md) exists in the repository', () => {
  const missing: string[] = [];
  let seen = 0;
  for (const top of SOURCES) {
    for (const file of files(top)) {
      if (file === __filename) continue; // names documents in its own prose
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\b([A-Z][A-Z0-9_-]*\.md)\b/g)) {
        seen++;
        if (!fs.existsSync(path.join(ROOT, m[1]!))) missing.push(`${path.relative(ROOT, file)}: ${m[1]}`);
      }
    }
  }
  assert.ok(seen > 0, 'no reference found at all: the scan is broken');
  assert.deepEqual(missing, []);
});
