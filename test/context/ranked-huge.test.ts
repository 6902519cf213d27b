/**
 * The ranked packing tokenizes no more of a huge file than decides that it does not fit: neither
 * its section in full nor its block in the repository map (a file of 12,000 functions has a block
 * of 300,000 characters) is passed whole to the tokenizer. Characters are counted as they reach
 * `countTokens` (the quarter-characters tokenizer, ⌈characters / 4⌉).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TagsCache } from '../../src/context/map/cache';
import { formatMapBlock } from '../../src/context/map/repomap';
import { packRepository } from '../../src/context/pack';
import { PREFIX_CHARS_PER_TOKEN, PREFIX_MARGIN_TOKENS } from '../../src/context/prefix-count';
import { makeRepo, quarterChars } from './fixtures';

const FUNCTIONS = 12_000;
const huge = Array.from({ length: FUNCTIONS }, (_, i) => `export function fn${i}(a, b) {\n  return a + b;\n}\n`).join('');

test('a huge file in ranked mode is tokenized only by prefix, in full and in the map alike', async (t) => {
  const root = await makeRepo(t, {
    'huge.js': huge,
    'small.js': 'export function small(x) {\n  return x;\n}\n',
  });
  const budget = 2000;
  const calls: number[] = [];
  const countTokens = (text: string): number => {
    calls.push(text.length);
    return quarterChars(text);
  };
  const r = await packRepository(root, { tokenBudget: budget, countTokens, packing: 'ranked', maxFileBytes: 1 << 20, tagsCache: new TagsCache() });
  // the block the map would have tokenized whole: one line per function, `  <line>: <signature>`
  const block = formatMapBlock('huge.js', Array.from({ length: FUNCTIONS }, (_, i) => ({ line: 3 * i + 1, signature: `export function fn${i}(a, b) {`, name: `fn${i}`, kind: 'function' as const, endLine: 3 * i + 3 })));
  assert.ok(block.length > 300_000, `block of ${block.length} characters`);
  assert.ok(huge.length > 500_000, `file of ${huge.length} characters`);
  // the longest text ever tokenized is one first prefix: (room + margin + 1) × 16 characters at most,
  // the room being the whole budget at most
  const firstPrefix = (budget + PREFIX_MARGIN_TOKENS + 1) * PREFIX_CHARS_PER_TOKEN;
  assert.ok(Math.max(...calls) <= firstPrefix, `longest tokenized ${Math.max(...calls)} > ${firstPrefix}`);
  // the file is over the budget in full and in the map: left out of both, small.js kept
  assert.deepEqual(
    r.skipped.map((s) => [s.path, s.reason, s.detail]),
    [['huge.js', 'over-budget', 'neither in full nor in the repository map (files are chosen by rank)']],
  );
  assert.deepEqual(r.files.map((f) => f.path), ['small.js']);
  assert.ok(r.totalTokens <= budget);
});
