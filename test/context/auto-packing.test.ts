/**
 * The `auto` packing, the product's default (`PackOptions.packing: 'auto'`): exactly the
 * smallest-first pack while every packable file fits the budget in full, exactly the ranked pack
 * (against `rankedTokenBudget`) from the first file that does not; deterministic for a repository
 * and budget. Token counts are the stand-in tokenizer's (ceil(characters / 4) per section),
 * worked out by hand below.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { packRepository, type PackResult } from '../../src/context/pack';
import { TagsCache } from '../../src/context/map/cache';
import { makeRepo, pack } from './fixtures';

/**
 * A section is `path\n` + "```\n" + content + "```\n": path + content + 9 characters.
 * src/hash.ts 11 + 92 + 9 = 112 → 28 tokens; src/store.ts 12 + 119 + 9 = 140 → 35;
 * src/cli.ts 10 + 181 + 9 = 200 → 50; README.md 9 + 34 + 9 = 52 → 13. In all 126 tokens.
 */
const TREE = {
  'src/hash.ts': 'export function hashKey(key: string): string {\n  return key.split("").reverse().join("");\n}\n',
  'src/store.ts': 'import { hashKey } from "./hash";\nexport function saveEntry(key: string): string {\n  return hashKey(key) + "/entry";\n}\n',
  'src/cli.ts': 'import { saveEntry } from "./store";\nimport { hashKey } from "./hash";\nexport function main(args: string[]): void {\n  for (const a of args) console.log(saveEntry(a), hashKey(a));\n}\n',
  'README.md': '# tiny\n\nA store with hashed keys.\n',
  'logo.png': 'not text', // binary by extension: never packable, never a reason to leave smallest-first
};
const ALL_TOKENS = 126;

/** What makes the prompt and what the report lists: everything but the (per-pack) secret verdicts and `auto`. */
function promptOf(p: PackResult) {
  return { sections: p.sections, files: p.files, mapped: p.mapped, retrievable: p.retrievable, skipped: p.skipped, totalTokens: p.totalTokens, tokenBudget: p.tokenBudget };
}

test('auto while every file fits in full: the smallest-first pack, byte for byte, with nothing to retrieve', async (t) => {
  const root = await makeRepo(t, TREE);
  const auto = await pack(root, { tokenBudget: ALL_TOKENS, packing: 'auto', rankedTokenBudget: ALL_TOKENS - 19 });
  const smallest = await pack(root, { tokenBudget: ALL_TOKENS, packing: 'smallest-first' });
  assert.deepEqual([auto.packing, auto.auto, smallest.auto], ['smallest-first', true, false]);
  assert.deepEqual(auto.files.map((f) => [f.path, f.tokens]).sort(), [['README.md', 13], ['src/cli.ts', 50], ['src/hash.ts', 28], ['src/store.ts', 35]]);
  assert.equal(auto.totalTokens, ALL_TOKENS);
  assert.equal(auto.sections.map((s) => s.text).join(''), smallest.sections.map((s) => s.text).join(''));
  assert.deepEqual(promptOf(auto), promptOf(smallest));
  assert.deepEqual(auto.retrievable, []);
  assert.deepEqual(auto.skipped.map((s) => [s.path, s.reason]), [['logo.png', 'binary']]);
  // no budget at all: everything fits
  const unbounded = await pack(root, { packing: 'auto' });
  assert.deepEqual([unbounded.packing, unbounded.totalTokens], ['smallest-first', ALL_TOKENS]);
});

test('auto one token short: the ranked pack against rankedTokenBudget, sections and budget exactly', async (t) => {
  const root = await makeRepo(t, TREE);
  const rankedTokenBudget = ALL_TOKENS - 1 - 19;
  const tagsCache = new TagsCache();
  const auto = await pack(root, { tokenBudget: ALL_TOKENS - 1, packing: 'auto', rankedTokenBudget, tagsCache });
  const ranked = await pack(root, { tokenBudget: rankedTokenBudget, packing: 'ranked', tagsCache });
  assert.deepEqual([auto.packing, auto.auto, ranked.auto], ['ranked', true, false]);
  assert.equal(auto.tokenBudget, rankedTokenBudget);
  assert.deepEqual(promptOf(auto), promptOf(ranked));
  assert.ok(auto.totalTokens <= rankedTokenBudget, `${auto.totalTokens} of ${rankedTokenBudget}`);
  assert.ok(auto.sections.some((s) => s.kind === 'map') && auto.retrievable.length > 0, 'the ranked pack maps and chunks the files not in full');
  // without rankedTokenBudget, ranked packs against the whole budget
  const whole = await pack(root, { tokenBudget: ALL_TOKENS - 1, packing: 'auto', tagsCache });
  assert.deepEqual(promptOf(whole), promptOf(await pack(root, { tokenBudget: ALL_TOKENS - 1, packing: 'ranked', tagsCache })));
});

test('the choice depends on the repository and the budget only: the same twice, and the open files do not change it', async (t) => {
  const root = await makeRepo(t, TREE);
  for (const [budget, expected] of [[ALL_TOKENS, 'smallest-first'], [ALL_TOKENS - 1, 'ranked'], [0, 'ranked']] as const) {
    const a = await pack(root, { tokenBudget: budget, packing: 'auto' });
    const b = await pack(root, { tokenBudget: budget, packing: 'auto', recentFiles: ['src/cli.ts'] });
    assert.deepEqual([a.packing, b.packing], [expected, expected], `budget ${budget}`);
    const again = await pack(root, { tokenBudget: budget, packing: 'auto' });
    assert.deepEqual(promptOf(again), promptOf(a), `budget ${budget}`);
  }
  // a file too large to pack is not a file that does not fit: auto keeps smallest-first
  const big = await pack(root, { tokenBudget: ALL_TOKENS - 13, packing: 'auto', maxFileBytes: 100 });
  assert.deepEqual([big.packing, big.skipped.map((s) => [s.path, s.reason])], ['smallest-first', [['logo.png', 'binary'], ['src/cli.ts', 'too-large'], ['src/store.ts', 'too-large']]]);
});

test('auto with a ranked budget above the budget, below 0, or an unknown packing is refused with the range', async (t) => {
  const root = await makeRepo(t, TREE);
  const count = (text: string) => text.length;
  await assert.rejects(packRepository(root, { tokenBudget: 10, rankedTokenBudget: 11, packing: 'auto', countTokens: count }), {
    name: 'RangeError',
    message: 'rankedTokenBudget must be a number in [0, tokenBudget = 10], got 11',
  });
  await assert.rejects(packRepository(root, { tokenBudget: 10, rankedTokenBudget: -1, packing: 'auto', countTokens: count }), RangeError);
  await assert.rejects(packRepository(root, { tokenBudget: 10, packing: 'biggest' as 'auto', countTokens: count }), {
    name: 'RangeError',
    message: "packing must be 'auto', 'smallest-first' or 'ranked', got biggest",
  });
});
