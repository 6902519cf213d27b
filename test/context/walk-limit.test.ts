/**
 * The walk is bounded (`maxWalkEntries` / `maxEntries`): on a tree larger than the bound it
 * stops breadth-first, deterministically, and the pack carries a notice.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MAX_WALK_ENTRIES, walkRepository } from '../../src/context/walk';
import { makeRepo, manifest, pack } from './fixtures';

/**
 * Breadth-first order of the fixture's entries, as the walk records them (each directory's
 * entries by name, the directories of one depth by path):
 *   depth 0: a.txt b.txt d1/ d2/                 → entries 1-4
 *   depth 1: d1/deep/ d1/f1.txt … d1/f5.txt      → entries 5-10
 *            d2/g1.txt d2/g2.txt d2/g3.txt       → entries 11-13
 *   depth 2: d1/deep/h1.txt … d1/deep/h5.txt     → entries 14-18
 */
const TREE: Record<string, string> = {
  'a.txt': 'a\n',
  'b.txt': 'b\n',
  ...Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`d1/f${i}.txt`, `f${i}\n`])),
  ...Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`d1/deep/h${i}.txt`, `h${i}\n`])),
  ...Object.fromEntries([1, 2, 3].map((i) => [`d2/g${i}.txt`, `g${i}\n`])),
};

test('the walk stops at maxEntries, breadth-first, the same at any concurrency, with a notice in the pack', async (t) => {
  const root = await makeRepo(t, TREE);

  // 6 entries: a.txt b.txt d1/ d2/ d1/deep/ d1/f1.txt; it stops while listing d1 (depth 1),
  // leaving d2 and d1/deep unlisted
  for (const concurrency of [1, 3, 64]) {
    const walked = await walkRepository(root, { maxEntries: 6, concurrency });
    assert.deepEqual(walked.files.map((f) => f.path), ['a.txt', 'b.txt', 'd1/f1.txt'], `concurrency ${concurrency}`);
    assert.deepEqual(walked.truncated, { maxEntries: 6, depth: 1, unlistedDirectories: 2 });
  }

  const result = await pack(root, { maxWalkEntries: 6 });
  assert.deepEqual(manifest(result).files, ['a.txt', 'b.txt', 'd1/f1.txt']);
  assert.deepEqual(result.notices, [
    {
      code: 'walk-limit',
      truncation: { maxEntries: 6, depth: 1, unlistedDirectories: 2 },
      message:
        'the walk stopped after 6 entries at depth 1, leaving at least 2 directories unlisted: only the part of the tree seen until then was packed (narrow it with include/exclude patterns, or raise the entry bound)',
    },
  ]);

  // 13 entries: everything down to depth 1; stops at the first entry of depth 2
  const thirteen = await pack(root, { maxWalkEntries: 13 });
  assert.deepEqual(manifest(thirteen).files, ['a.txt', 'b.txt', 'd1/f1.txt', 'd1/f2.txt', 'd1/f3.txt', 'd1/f4.txt', 'd1/f5.txt', 'd2/g1.txt', 'd2/g2.txt', 'd2/g3.txt']);
  assert.deepEqual(thirteen.notices.map((n) => n.truncation), [{ maxEntries: 13, depth: 2, unlistedDirectories: 0 }]);

  // exactly as many entries as the tree holds (18): complete, no notice; the default bound too
  for (const options of [{ maxWalkEntries: 18 }, {}]) {
    const whole = await pack(root, options);
    assert.equal(whole.files.length, 15);
    assert.deepEqual(whole.notices, []);
  }
  assert.equal(DEFAULT_MAX_WALK_ENTRIES, 100_000);
});

test('ignored and skipped entries count toward the bound; a bad bound is refused', async (t) => {
  const root = await makeRepo(t, { '.gitignore': '*.log\n', 'a.log': 'x', 'b.log': 'x', 'c.txt': 'c\n', 'link': { symlink: 'c.txt' } });
  // .gitignore a.log b.log c.txt link: the bound of 3 keeps .gitignore, a.log, b.log
  const result = await pack(root, { maxWalkEntries: 3 });
  assert.deepEqual(manifest(result), { files: ['.gitignore'], skipped: [], ignored: [['a.log', 'ignored'], ['b.log', 'ignored']] });
  assert.equal(result.notices.length, 1);
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    await assert.rejects(pack(root, { maxWalkEntries: bad }), RangeError);
  }
  assert.equal((await pack(root, { maxWalkEntries: Infinity })).notices.length, 0);
});
