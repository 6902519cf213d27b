/**
 * The erratum (context/erratum.ts, issue 30 (c)): the files that differ between the cached
 * prompt's sections and the repository's now, the text that goes after the cached prompt (the new
 * sections, or unified diffs), and the diffs checked by applying them with `git apply`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buildErratum, fileChanges, unifiedDiff } from '../../src/context/erratum';
import { formatFileSection } from '../../src/context/section';

const file = (p: string, content: string) => ({ path: p, text: formatFileSection(p, content) });

test('fileChanges: changed and added files in the current order, then deleted ones in the earlier order', () => {
  const base = [file('a.ts', 'a\n'), file('b.ts', 'b\n'), file('c.ts', 'c\n'), file('d.ts', 'd\n')];
  const current = [file('a.ts', 'a\n'), file('new.ts', 'n\n'), file('c.ts', 'c2\n')];
  assert.deepEqual(fileChanges(base, current), [
    { path: 'new.ts', kind: 'added' },
    { path: 'c.ts', kind: 'changed' },
    { path: 'b.ts', kind: 'deleted' },
    { path: 'd.ts', kind: 'deleted' },
  ]);
  assert.deepEqual(fileChanges(base, base), []);
});

test('the erratum holds the new text of each changed and added file, each under a note that it replaces the earlier text', () => {
  const base = [file('src/limits.ts', 'export const MAX_RETRIES = 3;\n'), file('old.ts', 'x\n')];
  const current = [file('src/limits.ts', 'export const MAX_RETRIES = 7;\n'), file('added.ts', 'export function added() {}\n')];
  const e = buildErratum(base, current, 'file');
  assert.equal(
    e.text,
    'The repository changed after the files above were read. What follows is the current version; where it differs from the text above, it replaces it.\n' +
      'src/limits.ts was edited; this replaces its earlier text above:\nsrc/limits.ts\n```\nexport const MAX_RETRIES = 7;\n```\n' +
      'added.ts was added:\nadded.ts\n```\nexport function added() {}\n```\n' +
      'old.ts was deleted: its text above no longer exists.\n',
  );
  assert.ok(!e.text.includes('MAX_RETRIES = 3'), 'the old value is not repeated');
  assert.equal(buildErratum(base, base, 'file').text, '');
});

/** Applies `diff` to `before` with `git apply` in a temp folder; returns the result. */
function gitApply(before: string, diff: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'reposnap-erratum-'));
  try {
    writeFileSync(path.join(dir, 'f.ts'), before);
    writeFileSync(path.join(dir, 'p.diff'), diff);
    execFileSync('git', ['apply', '--unidiff-zero', 'p.diff'], { cwd: dir, stdio: 'pipe' });
    return readFileSync(path.join(dir, 'f.ts'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('unifiedDiff: git apply turns the old text into the new one (hunks at the start, middle, end; insertions, deletions)', () => {
  const lines = Array.from({ length: 40 }, (_, i) => `line ${i}\n`);
  const old = lines.join('');
  const cases: string[] = [
    ['first\n', ...lines].join(''), // insert before the first line
    [...lines.slice(0, 20), 'changed 20\n', ...lines.slice(21)].join(''), // one line in the middle
    [...lines, 'last\n'].join(''), // append
    [...lines.slice(0, 5), ...lines.slice(12, 30), 'new a\n', 'new b\n', ...lines.slice(30, 38)].join(''), // two hunks, deletions
    '', // everything deleted
    'other\n',
  ];
  for (const now of cases) assert.equal(gitApply(old, unifiedDiff(old, now, 'f.ts')), now);
  assert.equal(gitApply('', unifiedDiff('', 'a\nb\n', 'f.ts')), 'a\nb\n');
  const d = unifiedDiff(old, cases[1]!, 'f.ts');
  assert.equal(d, '--- a/f.ts\n+++ b/f.ts\n@@ -18,7 +18,7 @@\n line 17\n line 18\n line 19\n-line 20\n+changed 20\n line 21\n line 22\n line 23\n');
});

test('the diff erratum holds a unified diff of the section, in a fence longer than the section\'s own', () => {
  const base = [file('a.ts', 'export const LIMIT = 3;\nexport function f() { return LIMIT; }\n')];
  const current = [file('a.ts', 'export const LIMIT = 9;\nexport function f() { return LIMIT; }\n')];
  const e = buildErratum(base, current, 'diff');
  assert.match(e.text, /a\.ts was edited; this diff of its text above gives the current text:\n````diff\n--- a\/a\.ts\n\+\+\+ b\/a\.ts\n@@ -1,5 \+1,5 @@\n a\.ts\n ```\n-export const LIMIT = 3;\n\+export const LIMIT = 9;\n export function f\(\) \{ return LIMIT; \}\n ```\n````\n$/);
});
