/**
 * The order of the sections and the token budget: least recently modified first, so that an
 * edit invalidates the token stream only from the edited file onward; when the repository
 * does not fit, the largest files are dropped first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { utimes, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { PackResult } from '../../src/context/pack';
import { detailOf, expectedSection, makeRepo, manifest, pack } from './fixtures';

/** A deterministic fake tokenizer: runs of whitespace and runs of anything else. */
const words = (text: string): string[] => text.match(/\s+|\S+/g) ?? [];
const countWords = (text: string): number => words(text).length;

/** The prompt's token stream: the sections' tokens, concatenated in prompt order. */
const stream = (result: PackResult): string[] => result.files.flatMap((f) => words(f.text));

/** Index of the first token where `a` and `b` differ (the length of their common prefix). */
function firstDifference(a: readonly string[], b: readonly string[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** Sets a file's mtime (and atime) to `seconds` since the epoch. */
const touch = (root: string, rel: string, seconds: number): Promise<void> => utimes(path.join(root, rel), seconds, seconds);

test('an edit changes the token stream only from the edited file onward (mtime order)', async (t) => {
  const source = (name: string, n: number): string =>
    Array.from({ length: n }, (_, i) => `export const ${name}${i} = ${i} * 2; // ${name}\n`).join('');
  const root = await makeRepo(t, {
    'a.ts': source('a', 6),
    'b.ts': source('b', 5),
    'c.ts': source('c', 7),
    'd.ts': source('d', 4),
  });
  // least recently modified first: c, a, d, b (not the path order)
  await touch(root, 'c.ts', 1_000);
  await touch(root, 'a.ts', 2_000);
  await touch(root, 'd.ts', 3_000);
  await touch(root, 'b.ts', 4_000);
  const before = await pack(root, { countTokens: countWords });
  assert.deepEqual(manifest(before).files, ['c.ts', 'a.ts', 'd.ts', 'b.ts']);
  assert.equal(before.order, 'mtime');

  // Edit a.ts (the second section): it moves to the end.
  await writeFile(path.join(root, 'a.ts'), source('a', 6).replace('a3 = 3', 'a3 = 33'));
  await touch(root, 'a.ts', 5_000);
  const after = await pack(root, { countTokens: countWords });
  assert.deepEqual(manifest(after).files, ['c.ts', 'd.ts', 'b.ts', 'a.ts']);
  const cTokens = words(before.files[0]!.text).length;
  assert.equal(firstDifference(stream(before), stream(after)), cTokens, 'the stream changes exactly where a.ts used to start');
  // every section but a.ts is token-for-token the same
  const sections = (r: PackResult): Map<string, string> => new Map(r.files.map((f) => [f.path, f.text]));
  for (const p of ['b.ts', 'c.ts', 'd.ts']) assert.equal(sections(after).get(p), sections(before).get(p));
  assert.equal(after.totalTokens, stream(after).length);

  // Editing a.ts again now costs only a.ts's own tokens: everything before it is kept.
  await writeFile(path.join(root, 'a.ts'), source('a', 6).replace('a3 = 3', 'a3 = 333'));
  await touch(root, 'a.ts', 6_000);
  const again = await pack(root, { countTokens: countWords });
  assert.deepEqual(manifest(again).files, ['c.ts', 'd.ts', 'b.ts', 'a.ts']);
  const aStart = stream(after).length - words(after.files[3]!.text).length;
  const inA = firstDifference(words(after.files[3]!.text), words(again.files[3]!.text));
  assert.ok(inA > 0, 'the edit is inside a.ts, past its header');
  assert.equal(firstDifference(stream(after), stream(again)), aStart + inA);

  // A new file goes last: the whole previous stream is a prefix of the new one.
  await writeFile(path.join(root, 'e.ts'), source('e', 2));
  await touch(root, 'e.ts', 7_000);
  const added = await pack(root, { countTokens: countWords });
  assert.deepEqual(manifest(added).files, ['c.ts', 'd.ts', 'b.ts', 'a.ts', 'e.ts']);
  assert.equal(firstDifference(stream(again), stream(added)), stream(again).length);

  // For contrast, path order: the same first edit invalidates everything from a.ts, at 0.
  await touch(root, 'a.ts', 8_000);
  const byPathBefore = await pack(root, { countTokens: countWords, order: 'path' });
  await writeFile(path.join(root, 'a.ts'), source('a', 6));
  const byPathAfter = await pack(root, { countTokens: countWords, order: 'path' });
  assert.deepEqual(manifest(byPathAfter).files, ['a.ts', 'b.ts', 'c.ts', 'd.ts', 'e.ts']);
  assert.ok(firstDifference(stream(byPathBefore), stream(byPathAfter)) < words(byPathBefore.files[0]!.text).length);
});

test('equal mtimes are ordered by path in code-unit order; order: "path" ignores mtimes', async (t) => {
  const root = await makeRepo(t, { 'a/x': 'x', 'a-b': 'x', 'a.txt': 'x', 'B': 'x', 'é.txt': 'x', 'a/b/c': 'x' });
  assert.deepEqual(manifest(await pack(root)).files, ['B', 'a-b', 'a.txt', 'a/b/c', 'a/x', 'é.txt']);
  await touch(root, 'B', 2_000_000_000);
  assert.deepEqual(manifest(await pack(root)).files, ['a-b', 'a.txt', 'a/b/c', 'a/x', 'é.txt', 'B']);
  assert.deepEqual(manifest(await pack(root, { order: 'path' })).files, ['B', 'a-b', 'a.txt', 'a/b/c', 'a/x', 'é.txt']);
  await assert.rejects(pack(root, { order: 'size' as 'path' }), RangeError);
});

test('budget: the largest files are dropped first, then the deepest; the rest keep prompt order', async (t) => {
  const root = await makeRepo(t, {
    'x.txt': '12345',
    'a/y.txt': '12345',
    'a/b/z.txt': '12345',
    'big.txt': '1234567890'.repeat(5),
  });
  const ten = (): number => 10; // every section costs 10 tokens
  const all = await pack(root, { countTokens: ten, tokenBudget: 40 });
  assert.deepEqual(manifest(all), { files: ['a/b/z.txt', 'a/y.txt', 'big.txt', 'x.txt'], skipped: [], ignored: [] });

  const three = await pack(root, { countTokens: ten, tokenBudget: 39 });
  assert.deepEqual(manifest(three), { files: ['a/b/z.txt', 'a/y.txt', 'x.txt'], skipped: [['big.txt', 'over-budget']], ignored: [] });
  // big.txt is not even tokenized: at half the lowest density seen, its 50 characters need 10
  assert.equal(detailOf(three, 'big.txt'), 'not tokenized: needs about 10+ tokens, 9 of 39 left (larger files are dropped first)');
  assert.equal(three.skipped[0]!.tokens, undefined);

  // same size: the deeper file goes first; once nothing fits, files are not even tokenized
  const two = await pack(root, { countTokens: ten, tokenBudget: 20 });
  assert.deepEqual(manifest(two), {
    files: ['a/y.txt', 'x.txt'],
    skipped: [
      ['a/b/z.txt', 'over-budget'],
      ['big.txt', 'over-budget'],
    ],
    ignored: [],
  });
  assert.equal(detailOf(two, 'a/b/z.txt'), 'not tokenized: 0 of 20 tokens left (larger files are dropped first)');
  assert.equal(two.totalTokens, 20);
});

test('budget: files that clearly cannot fit are not tokenized; the others are, and say what they need', async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'aaaa\n', 'b.txt': 'b'.repeat(100), 'c.txt': 'c'.repeat(200) });
  const seen: string[] = [];
  const counting = (text: string): number => {
    seen.push(text.slice(0, text.indexOf('\n')));
    return Math.ceil(text.length / 4);
  };
  // a.txt: 19 characters, 5 tokens (0.26 per character); b.txt: estimated 0.5 × 0.26 × 100 = 13
  // tokens, which could fit in the 20 left, so it is tokenized: 29; c.txt: estimated 25 > 20.
  const result = await pack(root, { countTokens: counting, tokenBudget: 25 });
  assert.deepEqual(manifest(result), {
    files: ['a.txt'],
    skipped: [
      ['b.txt', 'over-budget'],
      ['c.txt', 'over-budget'],
    ],
    ignored: [],
  });
  assert.deepEqual(seen, ['a.txt', 'b.txt']);
  assert.equal(detailOf(result, 'b.txt'), 'needs 29 tokens, 20 of 25 left (larger files are dropped first)');
  assert.equal(result.skipped[0]!.tokens, 29);
  assert.equal(detailOf(result, 'c.txt'), 'not tokenized: needs about 25+ tokens, 20 of 25 left (larger files are dropped first)');
});

test('token budget: sections fill the budget exactly; async countTokens is awaited; budget 0 packs nothing', async (t) => {
  const contents: Record<string, string> = { 'one.md': '1\n', 'two.md': 'two two\n', 'zzz.md': 'last one' };
  const root = await makeRepo(t, contents);
  const cost = (p: string): number => Math.ceil(expectedSection(p, contents[p]!).length / 4);
  const tokenBudget = cost('one.md') + cost('two.md'); // exactly two sections
  const result = await pack(root, { tokenBudget, countTokens: async (text) => Math.ceil(text.length / 4) });
  assert.deepEqual(manifest(result), { files: ['one.md', 'two.md'], skipped: [['zzz.md', 'over-budget']], ignored: [] });
  assert.equal(result.totalTokens, tokenBudget);
  assert.equal(result.files[0]!.text, expectedSection('one.md', '1\n'));
  assert.equal(result.files[0]!.tokens, cost('one.md'));
  assert.equal(result.totalBytes, 2 + 8);

  const none = await pack(root, { tokenBudget: 0 });
  assert.deepEqual(manifest(none).files, []);
  assert.equal(none.totalTokens, 0);
  assert.equal(none.skipped.length, 3);
});
