/**
 * Comments and messages point only to documents that ship with the repository: a reference to a
 * design note kept elsewhere (`DESIGN.md`) leaves a reader of the code with nothing to open.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCES = ['src', 'bench', 'test', 'media/src', 'native/addon', 'native/common', 'native/bench', 'native/build.mjs', 'native/CMakeLists.txt', '.ci', 'build.mjs'];

function* files(p: string): Generator<string> {
  const st = fs.statSync(p);
  if (st.isFile()) {
    if (/\.(ts|mjs|js|cpp|h|sh|txt)$|\/run$/.test(p)) yield p;
    return;
  }
  for (const name of fs.readdirSync(p)) yield* files(path.join(p, name));
}

test('every document named in the sources (an upper-case NAME.md) exists in the repository', () => {
  const missing: string[] = [];
  let seen = 0;
  for (const top of SOURCES) {
    const abs = path.join(ROOT, top);
    if (!fs.existsSync(abs)) continue;
    for (const file of files(abs)) {
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
